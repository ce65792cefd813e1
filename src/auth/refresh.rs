//! When the issuer's keys are fetched, and what a request does while they
//! cannot be (sans-IO). [`IssuerKeys`] is one isolate's state: the host
//! asks it for a [`Plan`] per token and, when told to fetch, GETs the URLs
//! it is handed ([`IssuerKeys::begin`]) and reports each [`Answer`]
//! ([`IssuerKeys::answered`]). Every decision is made here, on the clock
//! the host passes in; the host decides nothing.
//!
//! The rules, so that an issuer's outage costs the issuer little and this
//! server's users less:
//! - One refresh at a time: a request that needs the keys while one is
//!   under way waits for it ([`Plan::Wait`]).
//! - A failed refresh is remembered: none starts again for
//!   [`BACKOFF_MIN_MS`] after the first failure, twice as long after each
//!   next one, up to [`BACKOFF_MAX_MS`]. Meanwhile a token that needs keys
//!   this isolate does not have is answered `503` with `Retry-After`
//!   ([`Plan::Unavailable`]), not refused: it is not the client's fault.
//! - Keys read earlier keep verifying past their age limit while refreshes
//!   fail (no request waits for a retry), for at most [`STALE_MS`] more:
//!   issuers' outages are short, and a key the issuer removed must stop
//!   verifying some time.
//! - Discovery tries RFC 8414's metadata, then OIDC's
//!   ([`OAuthConfig::metadata_urls`]), going on to the next only when a
//!   document is not there (another 4xx, not JSON, another issuer's): an
//!   outage (a 5xx, a 429, no answer) ends the refresh at once.
//! - A token's claims (issuer, audience, lifetime) are checked before any
//!   of this (`resource::check`): a made-up token for another issuer or
//!   audience, or an expired one, never starts a fetch.

use serde_json::Value;

use super::keys::{jwks_uri, KeySet, JWKS_REFETCH_MS};
use super::OAuthConfig;

/// After a first failed refresh none is started for this long, in ms; each
/// next failure doubles it, up to [`BACKOFF_MAX_MS`].
pub const BACKOFF_MIN_MS: u64 = 2_000;

/// The longest back-off between failed refreshes, in ms.
pub const BACKOFF_MAX_MS: u64 = 60_000;

/// Keys keep verifying this long past their age limit
/// (`OAUTH_JWKS_TTL_SECONDS`) while every refresh fails, in ms.
pub const STALE_MS: u64 = 30 * 60 * 1000;

/// One GET of a refresh is given up after this long, in ms (the host's
/// timeout: a hanging issuer counts as an outage).
pub const FETCH_TIMEOUT_MS: u64 = 5_000;

/// A refresh under way for longer than this is taken as lost (its
/// request's I/O cancelled, say) and another may start, in ms: a refresh
/// is at most four GETs of [`FETCH_TIMEOUT_MS`] each.
pub const REFRESH_LOST_MS: u64 = 6 * FETCH_TIMEOUT_MS;

/// What a GET the host made came back with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A 2xx, with its body.
    Body(String),
    /// Any other status.
    Status(u16),
    /// No answer (a network error, the timeout): why.
    Failed(String),
}

/// What to do for a token, by the state of the issuer's keys.
#[derive(Debug, Clone, PartialEq)]
pub enum Plan {
    /// Verify its signature with this key (a JWK).
    Verify(Value),
    /// Refresh the key set ([`IssuerKeys::begin`]), then ask again.
    Fetch,
    /// Wait for the refresh under way, then ask again.
    Wait,
    /// The issuer has no key for it: the token is invalid (`401`).
    Invalid,
    /// The keys cannot be read now: `503`, to be retried after
    /// `retry_after_s` seconds; `why` says what failed.
    Unavailable {
        /// The last failure.
        why: String,
        /// Seconds until the next refresh may start (at least 1).
        retry_after_s: u64,
    },
}

/// A refresh the host is carrying out: the next URL to GET.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refresh {
    /// Which refresh (a lost one's late answers are ignored).
    id: u64,
    /// The URL to GET now.
    pub url: String,
}

/// The step a refresh is at.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// The `n`th metadata URL ([`OAuthConfig::metadata_urls`]).
    Metadata(usize),
    /// The key set at this URL.
    Jwks(String),
}

#[derive(Debug, Clone)]
struct Under {
    id: u64,
    step: Step,
    began_ms: u64,
}

/// One isolate's view of the issuer's keys: the key set, the refresh under
/// way, and the failures since the last success (see the module docs).
#[derive(Debug, Default)]
pub struct IssuerKeys {
    set: KeySet,
    under: Option<Under>,
    next_id: u64,
    /// Refreshes that failed in a row.
    failures: u32,
    /// No refresh starts before this (0: none failed).
    retry_at_ms: u64,
    /// Why the last refresh failed.
    why: String,
}

impl IssuerKeys {
    /// The key set as last read.
    pub fn keys(&self) -> &KeySet {
        &self.set
    }

    /// Whether a refresh is under way at `now_ms` (one under way for
    /// [`REFRESH_LOST_MS`] is taken as lost).
    pub fn refreshing(&self, now_ms: u64) -> bool {
        self.under
            .as_ref()
            .is_some_and(|u| now_ms.saturating_sub(u.began_ms) < REFRESH_LOST_MS)
    }

    /// What to do for a token signed with `alg` by key `kid` at `now_ms`.
    pub fn plan(&self, config: &OAuthConfig, alg: &str, kid: Option<&str>, now_ms: u64) -> Plan {
        let max_age = config.jwks_max_age_ms;
        let age = self.set.fetched_ms.map(|at| now_ms.saturating_sub(at));
        let refreshing = self.refreshing(now_ms);
        let backing_off = now_ms < self.retry_at_ms;
        if let Some(key) = self.set.find(alg, kid) {
            let age = age.unwrap_or(u64::MAX);
            let stale_ok = age < max_age.saturating_add(STALE_MS);
            let failing = self.failures > 0;
            return if age < max_age {
                Plan::Verify(key.clone())
            } else if refreshing && !(failing && stale_ok) {
                Plan::Wait
            } else if !backing_off && !refreshing {
                Plan::Fetch
            } else if stale_ok {
                // Stale, and the issuer failing (backing off, or retried
                // right now: nobody waits on a retry): the key still counts.
                Plan::Verify(key.clone())
            } else {
                self.unavailable(now_ms)
            };
        }
        if refreshing {
            Plan::Wait
        } else if backing_off {
            // The issuer may have a key this isolate could not read.
            self.unavailable(now_ms)
        } else if age.is_some_and(|a| a < JWKS_REFETCH_MS.min(max_age)) {
            // Read a moment ago, and no such key: made up (a flood of them
            // costs one fetch per JWKS_REFETCH_MS, not one each).
            Plan::Invalid
        } else {
            Plan::Fetch
        }
    }

    fn unavailable(&self, now_ms: u64) -> Plan {
        let wait_ms = self.retry_at_ms.saturating_sub(now_ms);
        Plan::Unavailable {
            why: self.why.clone(),
            retry_after_s: wait_ms.div_ceil(1000).max(1),
        }
    }

    /// Starts a refresh: the first URL to GET (the key set's, when it is
    /// configured or was found before; else the first metadata URL), or
    /// `None` when one is under way already (then wait for it) or the
    /// back-off of a failed one has not ended (then ask for a plan again).
    pub fn begin(&mut self, config: &OAuthConfig, now_ms: u64) -> Option<Refresh> {
        if self.refreshing(now_ms) || now_ms < self.retry_at_ms {
            return None;
        }
        let step = match config.jwks_url.clone().or_else(|| self.set.url.clone()) {
            Some(url) => Step::Jwks(url),
            None => Step::Metadata(0),
        };
        self.next_id = self.next_id.wrapping_add(1);
        let id = self.next_id;
        let url = url_of(config, &step)?;
        self.under = Some(Under {
            id,
            step,
            began_ms: now_ms,
        });
        Some(Refresh { id, url })
    }

    /// Takes the answer to `refresh`'s GET: the next GET of the refresh, or
    /// `None` when it is over (its outcome recorded: the keys, or the
    /// failure and its back-off).
    pub fn answered(
        &mut self,
        config: &OAuthConfig,
        refresh: Refresh,
        answer: Answer,
        now_ms: u64,
    ) -> Option<Refresh> {
        let step = match &self.under {
            Some(u) if u.id == refresh.id => u.step.clone(),
            // A lost refresh's answer, after another started: ignored.
            _ => return None,
        };
        let url = refresh.url;
        let next = match (step, answer) {
            (Step::Metadata(n), Answer::Body(text)) => {
                let doc = serde_json::from_str::<Value>(&text).ok();
                match doc.as_ref().map(|doc| jwks_uri(config, doc)) {
                    Some(Some(jwks)) => {
                        // Kept even if the key set then fails to come: the
                        // next refresh asks it alone.
                        self.set.url = Some(jwks.clone());
                        Ok(Step::Jwks(jwks))
                    }
                    Some(None) => {
                        let why = format!("{url} names another issuer or no jwks_uri");
                        self.next_metadata(config, n, why)
                    }
                    None => self.next_metadata(config, n, format!("{url} is not JSON")),
                }
            }
            (Step::Metadata(n), Answer::Status(status)) if !outage(status) => {
                self.next_metadata(config, n, format!("{url} answered {status}"))
            }
            (Step::Metadata(_), Answer::Status(status)) => Err(format!("{url} answered {status}")),
            (Step::Jwks(_), Answer::Body(text)) => {
                let keys = serde_json::from_str::<Value>(&text)
                    .ok()
                    .filter(|doc| doc.get("keys").is_some_and(Value::is_array));
                match keys {
                    Some(doc) => {
                        self.set.url = Some(url);
                        self.set.update(&doc, now_ms);
                        self.under = None;
                        self.failures = 0;
                        self.retry_at_ms = 0;
                        self.why.clear();
                        return None;
                    }
                    None => Err(format!("{url} is not a JWKS document")),
                }
            }
            (Step::Jwks(_), Answer::Status(status)) => {
                // Not there (any more): the metadata is read again next time.
                if !outage(status) && config.jwks_url.is_none() {
                    self.set.url = None;
                }
                Err(format!("{url} answered {status}"))
            }
            (_, Answer::Failed(why)) => Err(why),
        };
        match next {
            Ok(step) => {
                let url = url_of(config, &step);
                if let (Some(u), Some(url)) = (self.under.as_mut(), url.as_ref()) {
                    u.step = step;
                    return Some(Refresh {
                        id: refresh.id,
                        url: url.clone(),
                    });
                }
                self.failed("no URL to fetch".into(), now_ms);
                None
            }
            Err(why) => {
                self.failed(why, now_ms);
                None
            }
        }
    }

    /// The metadata URL after the `n`th, or the failure `why` when there is
    /// none.
    fn next_metadata(&self, config: &OAuthConfig, n: usize, why: String) -> Result<Step, String> {
        if n + 1 < config.metadata_urls().len() {
            Ok(Step::Metadata(n + 1))
        } else {
            Err(why)
        }
    }

    /// A refresh failed: remembered, and none starts again before the
    /// back-off ends.
    fn failed(&mut self, why: String, now_ms: u64) {
        self.under = None;
        self.failures = self.failures.saturating_add(1);
        self.retry_at_ms = now_ms.saturating_add(backoff_ms(self.failures));
        self.why = why;
    }
}

/// The back-off after `failures` failed refreshes in a row (1 or more).
pub fn backoff_ms(failures: u32) -> u64 {
    let doublings = failures.saturating_sub(1).min(16);
    (BACKOFF_MIN_MS << doublings).min(BACKOFF_MAX_MS)
}

/// A status that says the issuer is down or overloaded (not that a
/// document is elsewhere).
fn outage(status: u16) -> bool {
    status >= 500 || status == 429 || status == 408
}

fn url_of(config: &OAuthConfig, step: &Step) -> Option<String> {
    match step {
        Step::Metadata(n) => config.metadata_urls().get(*n).cloned(),
        Step::Jwks(url) => Some(url.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ISSUER: &str = "https://id.example";

    fn config() -> OAuthConfig {
        OAuthConfig {
            issuer: ISSUER.into(),
            jwks_max_age_ms: 300_000,
            ..OAuthConfig::default()
        }
    }

    fn metadata() -> Answer {
        Answer::Body(json!({"issuer": ISSUER, "jwks_uri": "https://id.example/jwks"}).to_string())
    }

    fn jwks() -> Answer {
        Answer::Body(
            json!({"keys": [{"kid": "k1", "kty": "EC", "crv": "P-256", "x": "a", "y": "b"}]})
                .to_string(),
        )
    }

    /// A refresh answered by `issuer` (by URL): the URLs it fetched.
    fn refresh(
        keys: &mut IssuerKeys,
        c: &OAuthConfig,
        now: u64,
        issuer: impl Fn(&str) -> Answer,
    ) -> Vec<String> {
        let mut fetched = Vec::new();
        let mut next = keys.begin(c, now);
        while let Some(r) = next {
            fetched.push(r.url.clone());
            let answer = issuer(&r.url);
            next = keys.answered(c, r, answer, now);
        }
        fetched
    }

    fn up(url: &str) -> Answer {
        if url.ends_with("/jwks") {
            jwks()
        } else if url.contains("oauth-authorization-server") {
            metadata()
        } else {
            Answer::Status(404)
        }
    }

    fn down(_: &str) -> Answer {
        Answer::Status(503)
    }

    fn retry_after(plan: &Plan) -> u64 {
        match plan {
            Plan::Unavailable { retry_after_s, .. } => *retry_after_s,
            other => panic!("not unavailable: {other:?}"),
        }
    }

    #[test]
    fn a_fresh_isolate_fetches_the_metadata_then_the_keys_and_verifies() {
        let c = config();
        let mut keys = IssuerKeys::default();
        assert_eq!(keys.plan(&c, "ES256", Some("k1"), 0), Plan::Fetch);
        let fetched = refresh(&mut keys, &c, 0, up);
        assert_eq!(
            fetched,
            [
                "https://id.example/.well-known/oauth-authorization-server",
                "https://id.example/jwks"
            ]
        );
        assert!(matches!(
            keys.plan(&c, "ES256", Some("k1"), 10),
            Plan::Verify(_)
        ));
        // A made-up key id: no fetch until JWKS_REFETCH_MS has passed.
        assert_eq!(keys.plan(&c, "ES256", Some("zz"), 10), Plan::Invalid);
        assert_eq!(
            keys.plan(&c, "ES256", Some("zz"), JWKS_REFETCH_MS),
            Plan::Fetch
        );
        // The key set's URL is remembered: the next refresh skips discovery.
        let fetched = refresh(&mut keys, &c, JWKS_REFETCH_MS, up);
        assert_eq!(fetched, ["https://id.example/jwks"]);
    }

    #[test]
    fn discovery_goes_on_past_a_missing_document_and_stops_at_an_outage() {
        let c = config();
        let mut keys = IssuerKeys::default();
        let oidc = |url: &str| {
            if url.ends_with("/jwks") {
                jwks()
            } else if url.contains("openid-configuration") {
                metadata()
            } else {
                Answer::Status(404)
            }
        };
        assert_eq!(
            refresh(&mut keys, &c, 0, oidc).len(),
            3,
            "a 404, OIDC, the keys"
        );
        let mut keys = IssuerKeys::default();
        assert_eq!(refresh(&mut keys, &c, 0, down).len(), 1, "one 503 ends it");
        let mut keys = IssuerKeys::default();
        let gone = |_: &str| Answer::Failed("connection refused".into());
        assert_eq!(refresh(&mut keys, &c, 0, gone).len(), 1);
        // Metadata naming another issuer, everywhere: each URL once.
        let mut keys = IssuerKeys::default();
        let other = |_: &str| {
            Answer::Body(
                json!({"issuer": "https://evil.example", "jwks_uri": "https://evil.example/j"})
                    .to_string(),
            )
        };
        let fetched = refresh(&mut keys, &c, 0, other);
        assert_eq!(fetched, c.metadata_urls());
        assert!(fetched.iter().all(|u| !u.contains("evil")));
        assert!(matches!(
            keys.plan(&c, "ES256", None, 1),
            Plan::Unavailable { why, .. } if why.contains("another issuer")
        ));
    }

    #[test]
    fn a_failure_is_remembered_with_a_back_off_that_grows_to_a_cap() {
        let c = config();
        let mut keys = IssuerKeys::default();
        let mut now = 0;
        let mut fetches = 0;
        let mut backoffs = Vec::new();
        for failure in 1..=8 {
            assert_eq!(keys.plan(&c, "ES256", Some("k1"), now), Plan::Fetch);
            fetches += refresh(&mut keys, &c, now, down).len();
            assert_eq!(fetches, failure, "one fetch per refresh");
            // Every request in the back-off: 503, no fetch.
            let wait = backoff_ms(failure as u32);
            backoffs.push(wait);
            for t in [now, now + 1, now + wait - 1] {
                let plan = keys.plan(&c, "ES256", Some("k1"), t);
                assert_eq!(retry_after(&plan), (now + wait - t).div_ceil(1000).max(1));
                assert_eq!(keys.begin(&c, t), None, "no refresh starts");
            }
            now += wait;
        }
        assert_eq!(
            backoffs,
            [2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000, 60_000]
        );
        // The issuer is back: one refresh, and the back-off is forgotten.
        refresh(&mut keys, &c, now, up);
        assert!(matches!(
            keys.plan(&c, "ES256", Some("k1"), now),
            Plan::Verify(_)
        ));
        assert_eq!(keys.failures, 0);
        refresh(&mut keys, &c, now + c.jwks_max_age_ms, down);
        assert_eq!(keys.retry_at_ms, now + c.jwks_max_age_ms + BACKOFF_MIN_MS);
    }

    #[test]
    fn one_refresh_at_a_time_and_the_others_wait_for_it() {
        let c = config();
        let mut keys = IssuerKeys::default();
        let first = keys.begin(&c, 0).expect("starts");
        assert_eq!(keys.plan(&c, "ES256", Some("k1"), 5), Plan::Wait);
        assert_eq!(keys.begin(&c, 5), None, "joined, not started again");
        let next = keys.answered(&c, first, metadata(), 10).expect("the keys");
        assert_eq!(keys.plan(&c, "ES256", None, 10), Plan::Wait);
        assert_eq!(keys.answered(&c, next, jwks(), 20), None);
        assert!(matches!(
            keys.plan(&c, "ES256", Some("k1"), 20),
            Plan::Verify(_)
        ));
        // A refresh that never ends (its I/O cancelled) is taken as lost,
        // and its late answers are ignored.
        let lost = keys.begin(&c, c.jwks_max_age_ms).expect("starts");
        let later = c.jwks_max_age_ms + REFRESH_LOST_MS;
        assert!(keys.refreshing(later - 1));
        assert!(!keys.refreshing(later));
        let again = keys.begin(&c, later).expect("another starts");
        assert_eq!(keys.answered(&c, lost, down("x"), later + 1), None);
        assert!(
            keys.refreshing(later + 1),
            "the late answer changed nothing"
        );
        assert_eq!(keys.failures, 0);
        assert_eq!(keys.answered(&c, again, jwks(), later + 2), None);
        assert!(!keys.refreshing(later + 2));
    }

    #[test]
    fn keys_read_before_an_outage_verify_past_their_age_up_to_a_bound() {
        let c = config();
        let mut keys = IssuerKeys::default();
        refresh(&mut keys, &c, 0, up);
        let ttl = c.jwks_max_age_ms;
        // Past the TTL: a refresh first; it fails; the key still counts.
        assert_eq!(keys.plan(&c, "ES256", Some("k1"), ttl), Plan::Fetch);
        assert_eq!(refresh(&mut keys, &c, ttl, down).len(), 1);
        assert!(matches!(
            keys.plan(&c, "ES256", Some("k1"), ttl + 1),
            Plan::Verify(_)
        ));
        // While a retry is under way nobody waits for it: the key counts.
        let retry = keys.begin(&c, keys.retry_at_ms).expect("a retry");
        let during = keys.retry_at_ms + 1;
        assert!(matches!(
            keys.plan(&c, "ES256", Some("k1"), during),
            Plan::Verify(_)
        ));
        assert_eq!(keys.plan(&c, "ES256", Some("new"), during), Plan::Wait);
        assert_eq!(keys.answered(&c, retry, down("x"), during), None);
        // A key this isolate never read: the issuer may have it. 503.
        assert!(matches!(
            keys.plan(&c, "ES256", Some("new"), ttl + 1),
            Plan::Unavailable { .. }
        ));
        // Refreshes keep failing, each after its back-off; the key counts
        // until STALE_MS past the TTL, then the answer is 503.
        let mut now = ttl;
        let mut refreshes = 1;
        while now < ttl + STALE_MS + BACKOFF_MAX_MS {
            now = keys.retry_at_ms;
            match keys.plan(&c, "ES256", Some("k1"), now) {
                Plan::Fetch => {
                    refresh(&mut keys, &c, now, down);
                    refreshes += 1;
                }
                other => panic!("{other:?} at {now}"),
            }
            let plan = keys.plan(&c, "ES256", Some("k1"), now);
            if now < ttl + STALE_MS {
                assert!(matches!(plan, Plan::Verify(_)), "{now}: {plan:?}");
            } else {
                assert_eq!(retry_after(&plan), BACKOFF_MAX_MS / 1000, "{now}");
            }
        }
        // About one refresh a minute through half an hour, not one a request.
        assert!(refreshes < 45, "{refreshes}");
        // The issuer is back: the keys are fresh again.
        now = keys.retry_at_ms;
        refresh(&mut keys, &c, now, up);
        assert!(matches!(
            keys.plan(&c, "ES256", Some("k1"), now),
            Plan::Verify(_)
        ));
    }

    #[test]
    fn a_key_set_that_is_not_one_is_a_failure_and_a_moved_one_is_found_again() {
        let c = config();
        let mut keys = IssuerKeys::default();
        let junk = |url: &str| {
            if url.ends_with("/jwks") {
                Answer::Body("<html>".into())
            } else {
                up(url)
            }
        };
        refresh(&mut keys, &c, 0, junk);
        assert!(matches!(
            keys.plan(&c, "ES256", Some("k1"), 1),
            Plan::Unavailable { why, .. } if why.contains("not a JWKS")
        ));
        let fetched = refresh(&mut keys, &c, BACKOFF_MIN_MS, up);
        assert_eq!(fetched, ["https://id.example/jwks"], "found before");
        // The key set answers 404 (moved): the metadata is read again.
        let at = BACKOFF_MIN_MS + c.jwks_max_age_ms;
        let moved = |url: &str| {
            if url.ends_with("/jwks") {
                Answer::Status(404)
            } else {
                up(url)
            }
        };
        assert_eq!(refresh(&mut keys, &c, at, moved).len(), 1);
        let fetched = refresh(&mut keys, &c, at + BACKOFF_MAX_MS, up);
        assert_eq!(fetched.len(), 2, "{fetched:?}");
    }
}
