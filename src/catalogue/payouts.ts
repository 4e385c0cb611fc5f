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

const COUNTRIES = new Map(Object.entries(banksData).filter(([code]) => /^[A-Z]{2}$/.test(code)) as Array<[string, CountryPayouts]>);
const FEES = feesData as unknown as Record<string, Record<string, FeeRule> | string>;

export type BeneficiaryType = 'bank_account' | 'mobile_money' | 'wallet';

/** The bank's or operator's display name, or undefined when the code is not a destination there. */
export function destinationName(type: Exclude<BeneficiaryType, 'wallet'>, country: string, code: string): string | undefined {
  const payouts = COUNTRIES.get(country);
  if (payouts === undefined) return undefined;
  return type === 'bank_account' ? payouts.banks[code] : payouts.mobile_money[code];
}

export function accountNumberValid(country: string, accountNumber: string): boolean {
  const payouts = COUNTRIES.get(country);
  return payouts !== undefined && new RegExp(payouts.account_number_pattern).test(accountNumber);
}

/** The transfer fee, or undefined when no fee is configured (the transfer is then not offered). */
export function payoutFeeMinor(type: BeneficiaryType, currency: string, amountMinor: number): number | undefined {
  if (type === 'wallet') return 0;
  const table = FEES[type];
  if (table === undefined || typeof table === 'string') return undefined;
  const rule = table[currency];
  if (rule === undefined) return undefined;
  const percent = (BigInt(amountMinor) * BigInt(rule.percent_bps)) / 10_000n;
  let fee = BigInt(rule.flat_minor) + percent;
  if (rule.cap_minor !== null && fee > BigInt(rule.cap_minor)) fee = BigInt(rule.cap_minor);
  return Number(fee);
}
