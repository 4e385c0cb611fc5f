// The front end's index of customer emails and phones per account, for 409 DUPLICATE across partitions.
// Main thread; rebuilt from the shards at start-up. A value is reserved before the creating command is
// sent and released if the command does not succeed, so two concurrent creations cannot both pass.
// Invariant: within one owner, an email or phone maps to at most one customer.
import { SplitMap } from '../http/split-map.ts';

export class CustomerIndex {
  private readonly byValue = new SplitMap<string>();

  private static emailKey(owner: string, email: string): string {
    return `${owner}|e|${email}`;
  }

  private static phoneKey(owner: string, phone: string): string {
    return `${owner}|p|${phone}`;
  }

  restore(owner: string, email: string, phone: string, customerId: string): void {
    this.byValue.set(CustomerIndex.emailKey(owner, email), customerId);
    this.byValue.set(CustomerIndex.phoneKey(owner, phone), customerId);
  }

  /** Which of email/phone another customer already holds (or has reserved). */
  taken(owner: string, values: { email?: string; phone?: string }, self?: string): 'email' | 'phone' | null {
    if (values.email !== undefined) {
      const holder = this.byValue.get(CustomerIndex.emailKey(owner, values.email));
      if (holder !== undefined && holder !== self) return 'email';
    }
    if (values.phone !== undefined) {
      const holder = this.byValue.get(CustomerIndex.phoneKey(owner, values.phone));
      if (holder !== undefined && holder !== self) return 'phone';
    }
    return null;
  }

  /** The customer holding this email or phone in this owner (or reserving it for a creation in flight). */
  find(owner: string, by: { email: string } | { phone: string }): string | undefined {
    return this.byValue.get('email' in by ? CustomerIndex.emailKey(owner, by.email) : CustomerIndex.phoneKey(owner, by.phone));
  }

  reserve(owner: string, values: { email?: string; phone?: string }, holder: string): void {
    if (values.email !== undefined) this.byValue.set(CustomerIndex.emailKey(owner, values.email), holder);
    if (values.phone !== undefined) this.byValue.set(CustomerIndex.phoneKey(owner, values.phone), holder);
  }

  release(owner: string, values: { email?: string; phone?: string }, holder: string): void {
    const keys = [
      values.email === undefined ? undefined : CustomerIndex.emailKey(owner, values.email),
      values.phone === undefined ? undefined : CustomerIndex.phoneKey(owner, values.phone),
    ];
    for (const key of keys) if (key !== undefined && this.byValue.get(key) === holder) this.byValue.delete(key);
  }
}
