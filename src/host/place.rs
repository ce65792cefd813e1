//! Where a durable call's shard lives: the region a new call comes from,
//! the shard it goes to, and how that shard's object is opened (a location
//! hint, a jurisdiction).
//!
//! A shard's object is made where it is first reached, and stays there.
//! Drawn from one pool for the whole world, a European call could be kept
//! in America and pay an ocean per round; so a new call goes to a shard of
//! its caller's region (`request.cf.continent`, which the Worker reads into
//! [`crate::server::Env::continent`]), opened with that region's location
//! hint. With `CALL_JURISDICTION` set, every new call goes to a shard in
//! that jurisdiction instead, wherever its caller is.
//!
//! The call's id names its shard: `s<place><n>-<hex>` (`place` one of
//! the codes in `PLACES`, `n` under `CALL_SHARDS_PER_REGION`), kept in the object
//! `calls:<place><n>`. A later round reaches it by its id alone, whatever
//! its own region and whatever the vars say by then. Ids made before
//! (`s<n>-<hex>` in `calls:<n>`, bare hex in `call:<id>`) name the same
//! objects as they always did: their shard tag has no letters.
//!
//! The object's name says how it is opened ([`placement`]): the Worker
//! and the test server open every object through it, so whatever reaches a
//! shard (a round, a page, an operator's listing) reaches the same one.

use crate::server::{new_call_id, Config, Env};

/// How an object is opened: in a jurisdiction's namespace, with a
/// location hint. The default is neither (the namespace itself, placed
/// where the object is first reached).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Placement {
    /// Cloudflare's location hint (`weur`, `enam`, …): where the object
    /// is made when it does not exist yet; ignored for one that does.
    pub hint: Option<&'static str>,
    /// The jurisdiction (`eu`, …) whose namespace holds the object: it
    /// runs and stores its data only there. A name gives another object in
    /// another jurisdiction, so this is part of which object it is.
    pub jurisdiction: Option<&'static str>,
}

/// Every place a shard can be, by the code its id and name carry. The
/// codes are lowercase letters only (the shard number follows them), and
/// never change meaning: an id in flight names its place by one.
const PLACES: [(&str, Placement); 13] = [
    ("wnam", hinted("wnam")),
    ("enam", hinted("enam")),
    ("sam", hinted("sam")),
    ("weur", hinted("weur")),
    ("eeur", hinted("eeur")),
    ("apac", hinted("apac")),
    ("oc", hinted("oc")),
    ("afr", hinted("afr")),
    ("me", hinted("me")),
    // A jurisdiction takes no hint: where inside it is its own choice.
    ("eu", within("eu")),
    ("us", within("us")),
    ("fedramp", within("fedramp")),
    // (`fedramp-high`: an id's `-` ends its shard tag.)
    ("fedramphigh", within("fedramp-high")),
];

const fn hinted(hint: &'static str) -> Placement {
    Placement {
        hint: Some(hint),
        jurisdiction: None,
    }
}

const fn within(jurisdiction: &'static str) -> Placement {
    Placement {
        hint: None,
        jurisdiction: Some(jurisdiction),
    }
}

/// The place of a caller's continent (`request.cf.continent`): the
/// location hint nearest most of its people. `None` (Antarctica, an
/// unknown code, no `cf` at all as in local development): the shards of
/// no region (`calls:<n>`), as before regions.
///
/// North America goes to `enam` (most of its people are east of the
/// Rockies), Asia to `apac`; `wnam`, `eeur` and `me` are never chosen by
/// continent, only read in ids.
fn region_of(continent: [u8; 2]) -> Option<&'static str> {
    Some(match &continent {
        b"EU" => "weur",
        b"NA" => "enam",
        b"SA" => "sam",
        b"AS" => "apac",
        b"OC" => "oc",
        b"AF" => "afr",
        _ => return None,
    })
}

/// The places a continent leads to ([`region_of`]), each once.
const REGIONS: [&str; 6] = ["weur", "enam", "sam", "apac", "oc", "afr"];

/// The code of jurisdiction `name` (as `CALL_JURISDICTION` spells it).
fn jurisdiction_code(name: &str) -> Option<&'static str> {
    PLACES
        .iter()
        .find(|(_, p)| p.jurisdiction == Some(name))
        .map(|(code, _)| *code)
}

/// The shard tag of a call id (what is between its `s` and its first
/// `-`) read as its place's code and the shard's number: `("", n)` for a
/// shard of no region. `None`: not a shard's id (bare hex, or a tag of
/// another shape).
fn shard_tag(id: &str) -> Option<(&str, u32)> {
    let (tag, _) = id.strip_prefix('s')?.split_once('-')?;
    let digits = tag.find(|c: char| c.is_ascii_digit())?;
    let (code, n) = tag.split_at(digits);
    let known = code.is_empty() || PLACES.iter().any(|(c, _)| *c == code);
    let number = n.bytes().all(|b| b.is_ascii_digit());
    if !known || !number {
        return None;
    }
    Some((code, n.parse().ok()?))
}

/// How the object called `name` is opened. Only a regional shard
/// (`calls:<place><n>`) has a placement; every other object, and a shard
/// of no region, is opened plainly, as it always was.
pub fn placement(name: &str) -> Placement {
    let Some(tag) = name.strip_prefix("calls:") else {
        return Placement::default();
    };
    let code = tag.trim_end_matches(|c: char| c.is_ascii_digit());
    PLACES
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, p)| *p)
        .unwrap_or_default()
}

/// A new durable call's id: fresh randomness, led by the shard it lives
/// in (`s<place><n>-`, `s<n>-` for a shard of no region), so the id alone
/// names its object whatever the vars say later. Bare hex with
/// `CALL_SHARDS=0` (an object of its own, made near its caller anyway).
pub(super) fn new_durable_call_id(config: &Config, env: &Env) -> String {
    let id = new_call_id(env);
    if config.call_shards == 0 {
        return id;
    }
    let r = &env.random;
    let draw = u32::from_le_bytes([r[0], r[1], r[2], r[3]]);
    let place = match config.call_jurisdiction {
        Some(j) => jurisdiction_code(j),
        None if config.call_shards_per_region > 0 => env.continent.and_then(region_of),
        None => None,
    };
    match place {
        Some(code) => format!("s{code}{}-{id}", draw % place_shards(config)),
        None => format!("s{}-{id}", draw % config.call_shards),
    }
}

/// How many shards each place has. A jurisdiction has one at least: its
/// calls never go to a shard outside it.
fn place_shards(config: &Config) -> u32 {
    match config.call_jurisdiction {
        Some(_) => config.call_shards_per_region.max(1),
        None => config.call_shards_per_region,
    }
}

/// The places new calls may go to under `config`, and so the ones an
/// operator's id may name: every region's and the jurisdiction's.
fn places_in_use(config: &Config) -> Vec<&'static str> {
    let mut codes = Vec::new();
    if config.call_shards == 0 {
        return codes;
    }
    if config.call_shards_per_region > 0 {
        codes.extend(REGIONS);
    }
    codes.extend(config.call_jurisdiction.and_then(jurisdiction_code));
    codes
}

/// Whether `id` is a durable call id this server could have made under
/// its vars: 32 lowercase hex digits, led by `s<n>-` (`n` under
/// `CALL_SHARDS`) or `s<place><n>-` (a place in use, `n` under
/// `CALL_SHARDS_PER_REGION`). Checked before an id an operator names (not one
/// a verified token carries) names an object: any other would make one.
pub(crate) fn is_call_id(id: &str, config: &Config) -> bool {
    let hex = |h: &str| crate::server::is_call_id_shape(h);
    if !id.starts_with('s') {
        return hex(id);
    }
    let Some((code, n)) = shard_tag(id) else {
        return false;
    };
    let under = match code {
        "" => n < config.call_shards,
        code => places_in_use(config).contains(&code) && n < place_shards(config),
    };
    under && id.split_once('-').is_some_and(|(_, h)| hex(h))
}

/// The object holding durable call `id`: its shard's (`calls:<n>`,
/// `calls:<place><n>`), or its own (`call:<id>`) for an id that names no
/// shard. (A plain id is hex, so it never starts with `s`.)
pub(crate) fn call_object_name(id: &str) -> String {
    match shard_tag(id) {
        Some((code, n)) => format!("calls:{code}{n}"),
        None => format!("call:{id}"),
    }
}

/// Every call shard an operator's listing reads under `config`: those of
/// no region, then each place's in use. (Shards only an earlier
/// configuration used are not among them.)
pub(crate) fn call_shard_names(config: &Config) -> Vec<String> {
    let mut names: Vec<String> = (0..config.call_shards)
        .map(|n| format!("calls:{n}"))
        .collect();
    for code in places_in_use(config) {
        names.extend((0..place_shards(config)).map(|n| format!("calls:{code}{n}")));
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(continent: Option<&[u8; 2]>, first: u8) -> Env {
        Env {
            now_ms: 0,
            random: [first; 16],
            continent: continent.copied(),
        }
    }

    #[test]
    fn a_call_goes_to_a_shard_of_its_callers_region_opened_with_its_hint() {
        let config = Config::default();
        let id = new_durable_call_id(&config, &env(Some(b"EU"), 7));
        assert!(id.starts_with("sweur"), "{id}");
        assert!(is_call_id(&id, &config), "{id}");
        let name = call_object_name(&id);
        assert!(name.starts_with("calls:weur"), "{name}");
        assert_eq!(placement(&name), hinted("weur"));
        for (continent, hint) in [(b"NA", "enam"), (b"AS", "apac"), (b"OC", "oc")] {
            let id = new_durable_call_id(&config, &env(Some(continent), 1));
            assert_eq!(placement(&call_object_name(&id)).hint, Some(hint), "{id}");
        }
    }

    #[test]
    fn no_region_keeps_the_shards_of_no_region_as_before() {
        let config = Config::default();
        for continent in [None, Some(b"AN"), Some(b"T1")] {
            let id = new_durable_call_id(&config, &env(continent, 3));
            assert!(id.starts_with("s3-"), "{id}");
            assert_eq!(call_object_name(&id), "calls:3");
            assert_eq!(placement("calls:3"), Placement::default());
        }
        let off = Config {
            call_shards_per_region: 0,
            ..Config::default()
        };
        let id = new_durable_call_id(&off, &env(Some(b"EU"), 3));
        assert!(id.starts_with("s3-"), "{id}");
    }

    #[test]
    fn a_jurisdiction_takes_every_new_call_whatever_its_region() {
        let config = Config {
            call_jurisdiction: Some("eu"),
            ..Config::default()
        };
        for continent in [None, Some(b"EU"), Some(b"NA")] {
            let id = new_durable_call_id(&config, &env(continent, 2));
            assert!(id.starts_with("seu2-"), "{id}");
            assert_eq!(placement(&call_object_name(&id)), within("eu"));
            assert!(is_call_id(&id, &config));
        }
        // Never a shard outside it, whatever the counts say.
        let none = Config {
            call_shards_per_region: 0,
            ..config.clone()
        };
        let id = new_durable_call_id(&none, &env(Some(b"NA"), 5));
        assert!(id.starts_with("seu0-"), "{id}");
        let high = Config {
            call_jurisdiction: Some("fedramp-high"),
            ..Config::default()
        };
        let id = new_durable_call_id(&high, &env(None, 1));
        // Each jurisdiction the config takes has a place.
        for j in crate::server::JURISDICTIONS {
            assert!(jurisdiction_code(j).is_some(), "{j}");
        }
        assert_eq!(call_object_name(&id), "calls:fedramphigh1");
        assert_eq!(placement("calls:fedramphigh1"), within("fedramp-high"));
    }

    #[test]
    fn ids_made_before_regions_name_the_same_objects() {
        let hex = "0123456789abcdef0123456789abcdef";
        assert_eq!(call_object_name(&format!("s12-{hex}")), "calls:12");
        assert_eq!(call_object_name(hex), format!("call:{hex}"));
        // A tag of another shape was never a shard's: its own object.
        for odd in [
            format!("sx1-{hex}"),
            format!("s-{hex}"),
            format!("sweur-{hex}"),
        ] {
            assert_eq!(call_object_name(&odd), format!("call:{odd}"));
        }
        for name in [format!("call:{hex}"), "session:ab".into(), "hub".into()] {
            assert_eq!(placement(&name), Placement::default());
        }
    }

    #[test]
    fn an_operators_id_must_name_a_shard_in_use() {
        let config = Config::default();
        let hex = "0123456789abcdef0123456789abcdef";
        assert!(is_call_id(&format!("s15-{hex}"), &config));
        assert!(!is_call_id(&format!("s16-{hex}"), &config));
        assert!(is_call_id(&format!("sweur3-{hex}"), &config));
        assert!(!is_call_id(&format!("sweur4-{hex}"), &config));
        // `eeur` is a place, but no continent leads there.
        assert!(!is_call_id(&format!("seeur0-{hex}"), &config));
        assert!(!is_call_id(&format!("seu0-{hex}"), &config));
        assert!(!is_call_id(&format!("sweur0-{hex}x"), &config));
        assert!(!is_call_id(&format!("sweur0x-{hex}"), &config));
        let names = call_shard_names(&config);
        assert_eq!(names.len(), 16 + 6 * 4);
        assert!(names.contains(&"calls:apac3".to_string()));
        let eu = Config {
            call_jurisdiction: Some("eu"),
            ..Config::default()
        };
        assert!(is_call_id(&format!("seu0-{hex}"), &eu));
        assert!(call_shard_names(&eu).contains(&"calls:eu3".to_string()));
    }
}
