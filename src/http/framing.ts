// Request framing checks uWS leaves to the application. Main thread, inside uWS's request callback.
// Invariant: a request whose body length two parties could read differently is refused and its
// connection closed, so nothing after it on that connection is ever taken for a request of its own.
import type { HttpRequest, HttpResponse } from './uws.ts';

/**
 * Why this request's framing is ambiguous, or null. uWS frames a body by the first Content-Length and
 * takes `Transfer-Encoding: gzip, chunked` as chunked; a proxy in front may pick the other length or
 * coding, and the rest of the body would then run here as a second request (request smuggling).
 */
function framingProblem(req: HttpRequest): string | null {
  const coding = req.getHeader('transfer-encoding');
  if (coding !== '' && coding.trim().toLowerCase() !== 'chunked') {
    return `Transfer-Encoding ${coding} is not supported (send the body as it is, with Content-Length or chunked).`;
  }
  let length: string | null = null;
  let conflicting = false;
  let codings = 0;
  req.forEach((name, value) => {
    if (name === 'transfer-encoding') codings += 1;
    if (name !== 'content-length') return;
    if (length !== null && value.trim() !== length) conflicting = true;
    length = value.trim();
  });
  if (codings > 1) return 'More than one Transfer-Encoding header: the body\'s framing is ambiguous.';
  return conflicting ? 'Content-Length headers disagree: the body\'s length is ambiguous.' : null;
}

/**
 * Closes the connection of a request with ambiguous framing, at once and unanswered: after any reply
 * uWS still runs what follows in its buffer (the smuggled request), and closing right after a reply is
 * refused. (A proxy in front answers its client 502.) True when it did.
 */
export function closedForFraming(req: HttpRequest, res: HttpResponse, log: (why: string) => void): boolean {
  const problem = framingProblem(req);
  if (problem === null) return false;
  log(problem);
  res.close();
  return true;
}
