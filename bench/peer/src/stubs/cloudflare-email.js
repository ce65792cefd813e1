// Stand-in for `cloudflare:email`, which the Cloudflare edge provides but
// plain `workerd serve` does not. The agents package imports EmailMessage for
// its email-reply helpers; the benchmark never sends mail, so constructing one
// is an error rather than a silent no-op.
export class EmailMessage {
  constructor() {
    throw new Error('cloudflare:email is not available under plain workerd (bench stub)');
  }
}
