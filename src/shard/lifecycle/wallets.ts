// Wallets as more than one handler needs them: opening one (a customer's first, or an exchange's or a
// collection's target currency) and crediting a receiving wallet in its own partition (a wallet
// transfer's second step, also re-issued on recovery). Runs inside shard workers.
// Invariant: a credit carries the transfer id, so sending it again never pays twice.
import { partitionOfId } from '../../ids.ts';
import { newAccount } from '../../ledger/ledger.ts';
import type { Command } from '../protocol.ts';
import type { Beneficiary, Customer, Transfer, Wallet } from '../state.ts';
import type { Effect, HandlerContext } from './context.ts';

export function openWallet(ctx: HandlerContext, customer: Customer, currency: string): Wallet {
  return {
    ...newAccount(ctx.mintId(), 'wallet', currency),
    kind: 'wallet',
    customerId: customer.id,
    owner: customer.owner,
    createdAtMs: ctx.nowMs,
    updatedAtMs: ctx.nowMs,
  };
}

/**
 * Step two of a wallet transfer: credit the receiving wallet in its own partition (maybe another shard),
 * through the front end. The answer comes back as `transfer.credited`; the hold here is posted or voided
 * then. The credit is deduplicated by transfer id, so re-sending it after a crash never pays twice.
 */
export function creditEffect(ctx: HandlerContext, cmd: Pick<Command, 'owner' | 'partition'>, transfer: Transfer, beneficiary: Beneficiary): Effect {
  const target = partitionOfId(beneficiary.accountNumber);
  return {
    afterMs: 0,
    cmd: { k: 'transfer.credit', transferId: transfer.id, walletId: beneficiary.accountNumber, amountMinor: transfer.amountMinor, currency: transfer.currency, owner: cmd.owner, nowMs: ctx.nowMs, partition: target },
    replyTo: { cmd: { k: 'transfer.credited', id: transfer.id, owner: cmd.owner, nowMs: ctx.nowMs, partition: cmd.partition }, delayMs: ctx.railLatencyMs },
  };
}
