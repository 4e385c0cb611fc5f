// The nearest of a set of names to a misspelt one (Levenshtein distance), for "did you mean" hints.
// Any thread; pure.
// Invariant: a hint is given only when the names are close (at most a third of the longer one differs).

/** Edits (insert, delete, substitute one character) that turn `a` into `b`. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1);
      current.push(Math.min(previous[j]! + 1, current[j - 1]! + 1, substitution));
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** The closest of `known` to `name`, or null when none is within a third of the longer name's length. */
export function nearestName(name: string, known: readonly string[]): string | null {
  let best: string | null = null;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const distance = editDistance(name, candidate);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  if (best === null || bestDistance > Math.ceil(Math.max(name.length, best.length) / 3)) return null;
  return best;
}
