// Phone checks for services sold to a phone (airtime, data): E.164 normalisation, number type and
// country from libphonenumber's full ('max') metadata, carrier from the operators' number prefixes.
// Any thread; pure. Runs before any rail call, so an impossible number never reaches a rail.
// Invariant: `normalized` is set only when the number is valid, mobile and of the service country.
import { isSupportedCountry, parsePhoneNumberFromString } from 'libphonenumber-js/max';
import { operatorForPhone, type ServiceCode } from './services.ts';

export interface PhoneValidation {
  valid: boolean;
  normalized: string | null;
  country_code: string | null;
  number_type: string | null;
  carrier: string | null;
  messages: string[];
}

/** Number types a top-up can reach; FIXED_LINE_OR_MOBILE is how NANP numbers (US) are classified. */
const TOP_UP_TYPES: ReadonlySet<string> = new Set(['MOBILE', 'FIXED_LINE_OR_MOBILE']);
const PHONE_INPUT_LENGTH_MAX = 32;

/**
 * Validates `input` (national or E.164) as a mobile number of the service `country`. A query string
 * decodes an unescaped `+` to a space, so a leading space is read as `+`.
 */
export function validatePhone(input: string, country: string, service: ServiceCode): PhoneValidation {
  const invalid = (messages: string[], parsed?: { country: string | null; type: string | null }): PhoneValidation => ({
    valid: false, normalized: null, country_code: parsed?.country ?? null, number_type: parsed?.type ?? null, carrier: null, messages,
  });
  if (input.length > PHONE_INPUT_LENGTH_MAX) return invalid([`A phone number has at most ${PHONE_INPUT_LENGTH_MAX} characters.`]);
  const text = input.startsWith(' ') ? `+${input.trim()}` : input.trim();
  if (!isSupportedCountry(country)) return invalid([`${country} has no phone numbering plan.`]);
  const phone = parsePhoneNumberFromString(text, country);
  if (phone === undefined) return invalid(['Not a phone number.']);
  const found = { country: phone.country ?? null, type: phone.getType() ?? null };
  if (!phone.isPossible()) return invalid([`Impossible number: wrong length for ${found.country ?? country}.`], found);
  if (found.country !== country) return invalid([`The number belongs to ${found.country ?? `+${phone.countryCallingCode}`}, not ${country}.`], found);
  if (!phone.isValid()) return invalid([`Not a valid ${country} number.`], found);
  if (found.type === null || !TOP_UP_TYPES.has(found.type)) return invalid([`Not a mobile number (${found.type ?? 'unknown type'}).`], found);
  const carrier = operatorForPhone(country, service, phone.number)?.code ?? null;
  return {
    valid: true,
    normalized: phone.number,
    country_code: country,
    number_type: found.type,
    carrier,
    messages: carrier === null ? ['The network could not be told from the number; choose the operator.'] : [],
  };
}
