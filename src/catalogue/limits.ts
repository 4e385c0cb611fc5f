// Owns customer tier limits and collection fees, read from data/reference/{tiers,fees}.json.
// Any thread; pure data, validated once at module load and frozen.
// Invariant: every limit and fee is an integer in the currency's minor units, and fee arithmetic
// never touches a float, so the same request always yields the same fee on every thread.
import Type from 'typebox';
import tiersData from '../../data/reference/tiers.json' with { type: 'json' };
import feesData from '../../data/reference/fees.json' with { type: 'json' };
import { feeMinor, FeeRuleSchema, type FeeRule } from '../money/fee.ts';
import { isCurrencyCode } from './currencies.ts';
import { parseReference } from './reference.ts';

export type TierName = 'tier_1' | 'tier_2' | 'tier_3';

/** New customers start here. */
export const TIER_DEFAULT: TierName = 'tier_1';

export const TIER_ORDER: readonly TierName[] = ['tier_1', 'tier_2', 'tier_3'];

const MinorAmount = Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER });

const LimitSchema = Type.Object(
  { per_transaction_max_minor: MinorAmount, daily_max_minor: MinorAmount },
  { additionalProperties: false },
);
const TierTableSchema = Type.Record(Type.String(), LimitSchema);
const TiersFileSchema = Type.Object(
  { tier_1: TierTableSchema, tier_2: TierTableSchema, tier_3: TierTableSchema },
  { additionalProperties: false },
);

const FeesFileSchema = Type.Record(Type.String(), Type.Record(Type.String(), FeeRuleSchema));

export interface TierLimits {
  perTransactionMaxMinor: number;
  dailyMaxMinor: number;
}

function buildTiers(): ReadonlyMap<TierName, ReadonlyMap<string, TierLimits>> {
  const file = parseReference('tiers.json', TiersFileSchema, tiersData);
  const tiers = new Map<TierName, ReadonlyMap<string, TierLimits>>();
  const currencies = Object.keys(file[TIER_DEFAULT]).sort().join(',');
  let lower: ReadonlyMap<string, TierLimits> | undefined;
  for (const tier of TIER_ORDER) {
    const table = new Map<string, TierLimits>();
    // A customer must not lose headroom in some currency by moving up a tier, and a currency
    // missing from one tier would make its limit depend on which tier happens to be asked.
    if (Object.keys(file[tier]).sort().join(',') !== currencies) {
      throw new Error(`data/reference/tiers.json: ${tier} must list the same currencies as ${TIER_DEFAULT}`);
    }
    for (const [currency, limit] of Object.entries(file[tier])) {
      const where = `data/reference/tiers.json: ${tier}.${currency}`;
      if (!isCurrencyCode(currency)) throw new Error(`${where}: not an ISO 4217 code`);
      if (limit.per_transaction_max_minor > limit.daily_max_minor) throw new Error(`${where}: per transaction above daily`);
      const below = lower?.get(currency);
      if (below && (limit.per_transaction_max_minor < below.perTransactionMaxMinor || limit.daily_max_minor < below.dailyMaxMinor)) {
        throw new Error(`${where}: lower than the tier below`);
      }
      table.set(currency, Object.freeze({
        perTransactionMaxMinor: limit.per_transaction_max_minor,
        dailyMaxMinor: limit.daily_max_minor,
      }));
    }
    tiers.set(tier, table);
    lower = table;
  }
  return tiers;
}

function buildFees(): ReadonlyMap<string, FeeRule> {
  const file = parseReference('fees.json', FeesFileSchema, feesData);
  const fees = new Map<string, FeeRule>();
  for (const [method, byCurrency] of Object.entries(file)) {
    for (const [currency, fee] of Object.entries(byCurrency)) {
      if (!isCurrencyCode(currency)) throw new Error(`data/reference/fees.json: ${method}.${currency}: not an ISO 4217 code`);
      fees.set(`${method}/${currency}`, Object.freeze({ ...fee }));
    }
  }
  return fees;
}

const TIERS = buildTiers();
const FEES = buildFees();

/** Per-transaction and daily ceilings in minor units; undefined when the tier has no limit for the currency. */
export function tierLimits(tier: TierName, currency: string): TierLimits | undefined {
  return TIERS.get(tier)?.get(currency);
}

/**
 * Collection fee in minor units, under the fee rule of src/money/fee.ts taken from the amount: flat +
 * floor(amount × bps / 10 000), capped at cap_minor and never more than the amount itself (a fee
 * cannot make a collection negative). Throws RangeError when amountMinor is not a positive safe
 * integer or no fee is configured for the method and currency: charging nothing by default would
 * silently give collections away.
 */
export function collectionFeeMinor(method: string, currency: string, amountMinor: number): number {
  const fee = FEES.get(`${method}/${currency}`);
  if (fee === undefined) throw new RangeError(`no collection fee configured for ${method} in ${currency}`);
  return feeMinor(fee, amountMinor, 'from_amount');
}
