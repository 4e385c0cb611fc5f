// Payout destinations and fees: national bank codes and mobile-money operators per country
// (data/reference/banks.json) and transfer fees (data/reference/payout-fees.json). Any thread; pure.
// Invariant: a transfer fee follows the one fee rule (src/money/fee.ts), charged on top of the amount:
// integer arithmetic, rounded down, capped at the rule's cap.
import Type from 'typebox';
import banksData from '../../data/reference/banks.json' with { type: 'json' };
import feesData from '../../data/reference/payout-fees.json' with { type: 'json' };
import { feeMinor, FeeRuleSchema, type FeeRule } from '../money/fee.ts';
import { parseReference } from './reference.ts';

interface CountryPayouts {
  account_number_pattern: string;
  banks: Record<string, string>;
  mobile_money: Record<string, string>;
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
// Checked at load like every other fee table (a string entry is the file's comment).
const FeesFileSchema = Type.Record(Type.String(), Type.Union([Type.String(), Type.Record(Type.String(), FeeRuleSchema)]));
const FEES: ReadonlyMap<string, ReadonlyMap<string, FeeRule>> = new Map(
  Object.entries(parseReference('payout-fees.json', FeesFileSchema, feesData))
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

/**
 * The transfer fee, charged on top of the amount, or undefined when no fee is configured (the transfer
 * is then not offered). Throws RangeError like feeMinor (an amount that is not a positive safe integer).
 */
export function payoutFeeMinor(type: BeneficiaryType, currency: string, amountMinor: number): number | undefined {
  if (type === 'wallet') return 0;
  const rule = FEES.get(type)?.get(currency);
  if (rule === undefined) return undefined;
  return feeMinor(rule, amountMinor, 'on_top');
}
