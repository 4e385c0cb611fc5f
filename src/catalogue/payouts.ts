// Payout destinations and fees: national bank codes and mobile-money operators per country
// (data/reference/banks.json) and transfer fees (data/reference/payout-fees.json). Any thread; pure.
// Invariant: fees are integer arithmetic, rounded down, capped, never more than the amount.
import banksData from '../../data/reference/banks.json' with { type: 'json' };
import feesData from '../../data/reference/payout-fees.json' with { type: 'json' };

interface CountryPayouts {
  account_number_pattern: string;
  banks: Record<string, string>;
  mobile_money: Record<string, string>;
}

interface FeeRule {
  percent_bps: number;
  flat_minor: number;
  cap_minor: number | null;
}

interface Destinations {
  accountNumberPattern: RegExp;
  banks: ReadonlyMap<string, string>;
  mobileMoney: ReadonlyMap<string, string>;
}

// Maps, never plain objects indexed by a client's code: `payouts.banks['__proto__']` or `['toString']`
// would answer an inherited value, and such a "bank" was stored as a verified beneficiary and paid out to.
const COUNTRIES: ReadonlyMap<string, Destinations> = new Map(
  (Object.entries(banksData).filter(([code]) => /^[A-Z]{2}$/.test(code)) as Array<[string, CountryPayouts]>).map(([code, p]) => [
    code,
    { accountNumberPattern: new RegExp(p.account_number_pattern), banks: new Map(Object.entries(p.banks)), mobileMoney: new Map(Object.entries(p.mobile_money)) },
  ]),
);
const FEES: ReadonlyMap<string, ReadonlyMap<string, FeeRule>> = new Map(
  Object.entries(feesData as unknown as Record<string, Record<string, FeeRule> | string>)
    .filter((entry): entry is [string, Record<string, FeeRule>] => typeof entry[1] !== 'string')
    .map(([type, table]) => [type, new Map(Object.entries(table))]),
);

export type BeneficiaryType = 'bank_account' | 'mobile_money' | 'wallet';

/** The bank's or operator's display name, or undefined when the code is not a destination there. */
export function destinationName(type: Exclude<BeneficiaryType, 'wallet'>, country: string, code: string): string | undefined {
  const payouts = COUNTRIES.get(country);
  if (payouts === undefined) return undefined;
  return (type === 'bank_account' ? payouts.banks : payouts.mobileMoney).get(code);
}

export function accountNumberValid(country: string, accountNumber: string): boolean {
  const payouts = COUNTRIES.get(country);
  return payouts !== undefined && payouts.accountNumberPattern.test(accountNumber);
}

/** The transfer fee, or undefined when no fee is configured (the transfer is then not offered). */
export function payoutFeeMinor(type: BeneficiaryType, currency: string, amountMinor: number): number | undefined {
  if (type === 'wallet') return 0;
  const rule = FEES.get(type)?.get(currency);
  if (rule === undefined) return undefined;
  const percent = (BigInt(amountMinor) * BigInt(rule.percent_bps)) / 10_000n;
  let fee = BigInt(rule.flat_minor) + percent;
  if (rule.cap_minor !== null && fee > BigInt(rule.cap_minor)) fee = BigInt(rule.cap_minor);
  return Number(fee);
}
