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

export class RequestMetrics {
  private readonly counts = new Map<string, Series>();
  private readonly durations = new Map<string, DurationSeries>();

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
    const durationKey = `${method} ${route}`;
    const countKey = `${durationKey} ${status}`;
    let count = this.counts.get(countKey);
    if (count === undefined) {
      count = { labels: { method, route, status: String(status) }, count: 0 };
      this.counts.set(countKey, count);
    }
    count.count += 1;
    let duration = this.durations.get(durationKey);
    if (duration === undefined) {
      duration = { labels: { method, route }, count: 0, sumSeconds: 0, buckets: new Float64Array(this.bucketsSeconds.length + 1) };
      this.durations.set(durationKey, duration);
    }
    duration.count += 1;
    duration.sumSeconds += seconds;
    let bucket = 0;
    while (bucket < this.bucketsSeconds.length && seconds > this.bucketsSeconds[bucket]!) bucket += 1;
    duration.buckets[bucket]! += 1;
  }

  private countMetric(): CollectedMetric {
    const name = 'kobo_http_requests_total';
    const help = 'HTTP requests answered, by method, route template and status.';
    return {
      name, help, type: 'counter', aggregator: 'sum',
      get: async () => ({ name, help, type: 'counter', aggregator: 'sum', values: [...this.counts.values()].map((s) => ({ labels: s.labels, value: s.count })) }),
      reset: () => this.counts.clear(),
    };
  }

  private durationMetric(): CollectedMetric {
    const name = 'kobo_http_request_duration_seconds';
    const help = 'Time from request received to response written, by method and route template.';
    return {
      name, help, type: 'histogram', aggregator: 'sum',
      get: async () => {
        const values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> = [];
        for (const s of this.durations.values()) {
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
      reset: () => this.durations.clear(),
    };
  }
}
