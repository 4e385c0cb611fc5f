// Per-request HTTP metrics kept as plain numbers and handed to the Prometheus registry only when it is
// scraped. Main thread. prom-client's own counters and histograms hash their label set on every inc and
// observe, even through a bound child: that hashing showed in the read path's profile, once per request.
// Invariant: the series (method × route template × status) are bounded by the route table.
import type { Metric, Registry } from 'prom-client';

interface Series {
  labels: Record<string, string>;
  count: number;
}

interface DurationSeries extends Series {
  sumSeconds: number;
  /** Observations per bucket (not cumulative), the last one for +Inf. */
  buckets: Float64Array;
}

/** A metric as prom-client's registry reads it (`get()` at every scrape). */
interface CollectedMetric {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  aggregator: 'sum';
  get(): Promise<{ name: string; help: string; type: 'counter' | 'histogram'; aggregator: 'sum'; values: Array<{ metricName?: string; labels: Record<string, string | number>; value: number }> }>;
  reset(): void;
}

/** One method on one route: its duration series and its count series by status. */
interface MethodSeries {
  /** null after the histogram's reset, until the next observation. */
  duration: DurationSeries | null;
  byStatus: Map<number, Series>;
}

export class RequestMetrics {
  /**
   * route template → method → series. Two lookups keyed by strings uWS and the route table already made
   * (the template is the route table's own string, its hash cached), then the status by number: no key
   * string is built per request.
   */
  private readonly series = new Map<string, Map<string, MethodSeries>>();

  constructor(
    registry: Registry,
    private readonly bucketsSeconds: readonly number[],
  ) {
    // The registry reads `name` and calls `get()` (and `reset()`); its type names only prom-client's own
    // metric classes, which hash labels on every call: hence the cast.
    registry.registerMetric(this.countMetric() as unknown as Metric);
    registry.registerMetric(this.durationMetric() as unknown as Metric);
  }

  /** One answered request: counted by method, route template and status; timed by method and route. */
  observe(method: string, route: string, status: number, seconds: number): void {
    let methods = this.series.get(route);
    if (methods === undefined) this.series.set(route, (methods = new Map()));
    let of = methods.get(method);
    if (of === undefined) {
      of = { duration: null, byStatus: new Map() };
      methods.set(method, of);
    }
    if (of.duration === null) of.duration = { labels: { method, route }, count: 0, sumSeconds: 0, buckets: new Float64Array(this.bucketsSeconds.length + 1) };
    let count = of.byStatus.get(status);
    if (count === undefined) {
      count = { labels: { method, route, status: String(status) }, count: 0 };
      of.byStatus.set(status, count);
    }
    count.count += 1;
    const duration = of.duration;
    duration.count += 1;
    duration.sumSeconds += seconds;
    let bucket = 0;
    while (bucket < this.bucketsSeconds.length && seconds > this.bucketsSeconds[bucket]!) bucket += 1;
    duration.buckets[bucket]! += 1;
  }

  private *allSeries(): IterableIterator<MethodSeries> {
    for (const methods of this.series.values()) yield* methods.values();
  }

  private countMetric(): CollectedMetric {
    const name = 'kobo_http_requests_total';
    const help = 'HTTP requests answered, by method, route template and status.';
    return {
      name, help, type: 'counter', aggregator: 'sum',
      get: async () => ({ name, help, type: 'counter', aggregator: 'sum', values: [...this.allSeries()].flatMap((of) => [...of.byStatus.values()].map((s) => ({ labels: s.labels, value: s.count }))) }),
      // Each metric resets only its own series (the counts here, the histogram's below).
      reset: () => {
        for (const of of this.allSeries()) of.byStatus.clear();
      },
    };
  }

  private durationMetric(): CollectedMetric {
    const name = 'kobo_http_request_duration_seconds';
    const help = 'Time from request received to response written, by method and route template.';
    return {
      name, help, type: 'histogram', aggregator: 'sum',
      get: async () => {
        const values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> = [];
        for (const { duration: s } of this.allSeries()) {
          if (s === null) continue;
          let cumulative = 0;
          this.bucketsSeconds.forEach((le, i) => {
            cumulative += s.buckets[i]!;
            values.push({ metricName: `${name}_bucket`, labels: { le, ...s.labels }, value: cumulative });
          });
          values.push({ metricName: `${name}_bucket`, labels: { le: '+Inf', ...s.labels }, value: s.count });
          values.push({ metricName: `${name}_sum`, labels: s.labels, value: s.sumSeconds });
          values.push({ metricName: `${name}_count`, labels: s.labels, value: s.count });
        }
        return { name, help, type: 'histogram', aggregator: 'sum', values };
      },
      reset: () => {
        for (const of of this.allSeries()) of.duration = null;
      },
    };
  }
}
