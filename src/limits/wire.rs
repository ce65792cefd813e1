//! What the Worker and a meter say to each other, read from JSON by hand
//! over the `serde_json::Value` reader every worker already links (as the
//! `LIMITS` var and an operator's raise are, in `policy.rs`). Derived
//! readers cost a struct deserializer per type (about 25 KB of wasm for
//! these); what is written out is still derived (`Serialize`), and read
//! back here.

use serde_json::Value;

use super::meter::{Admit, Admitted, Ask, Kind, Note, Refusal, Verdict};
use super::policy::Applied;

use super::policy::{count, limits, number, scoped, text, Read};

fn applied(v: &Value) -> Read<Applied> {
    Ok(Applied {
        all: limits(&v["all"])?,
        tool: limits(&v["tool"])?,
    })
}

fn kind(v: &Value) -> Read<Kind> {
    match v.as_str() {
        Some("rate") => Ok(Kind::Rate),
        Some("daily") => Ok(Kind::Daily),
        Some("held") => Ok(Kind::Held),
        Some("active") => Ok(Kind::Active),
        _ => Err(format!("not a kind of limit: {v}")),
    }
}

/// A refusal as [`Refusal`] writes itself.
pub fn refusal(v: &Value) -> Read<Refusal> {
    Ok(Refusal {
        limit: kind(&v["limit"])?,
        scope: text(&v["scope"], "scope")?.to_string(),
        tool: text(&v["tool"], "tool")?.to_string(),
        max: count(&v["max"], "max")?.unwrap_or(0),
        period: v["period"].as_str().map(str::to_string),
        retry_after: number(&v["retryAfter"]),
        retry_at: number(&v["retryAt"]),
    })
}

fn note(v: &Value) -> Read<Note> {
    if let Some(lease) = v["release"].as_str() {
        return Ok(Note::Release(lease.to_string()));
    }
    let (held, body) = match (&v["held"], &v["waiting"]) {
        (Value::Null, Value::Null) => return Err(format!("not a note: {v}")),
        (Value::Null, w) => (false, w),
        (h, _) => (true, h),
    };
    let call = text(&body["call"], "call")?.to_string();
    let tool = body["tool"].as_str().unwrap_or_default().to_string();
    let until = number(&body["until"]);
    Ok(if held {
        Note::Held { call, tool, until }
    } else {
        Note::Waiting { call, tool, until }
    })
}

/// What a meter is asked, as [`Ask`] writes itself.
pub fn ask(v: &Value) -> Read<Ask> {
    if let Some(a) = v.get("admit") {
        return Ok(Ask::Admit(Admit {
            tool: text(&a["tool"], "tool")?.to_string(),
            lease: text(&a["lease"], "lease")?.to_string(),
            new: a["new"].as_bool().unwrap_or(true),
            limits: applied(&a["limits"])?,
            lease_ms: number(&a["lease_ms"]),
            want: count(&a["want"], "want")?.unwrap_or(1),
        }));
    }
    if let Some(n) = v.get("notes") {
        let notes = (n["notes"].as_array().into_iter().flatten())
            .map(note)
            .collect::<Read<Vec<Note>>>()?;
        return Ok(Ask::Notes { notes });
    }
    if let Some(u) = v.get("usage") {
        return Ok(Ask::Usage {
            limits: scoped(&u["limits"])?,
        });
    }
    if let Some(r) = v.get("raise") {
        return Ok(Ask::Raise {
            limits: scoped(&r["limits"])?,
            raise: scoped(&r["raise"])?,
        });
    }
    Err(format!("not a meter request: {v}"))
}

/// A meter's answer to an admit, as [`Verdict`] writes itself.
pub fn verdict(v: &Value) -> Read<Verdict> {
    if let Some(a) = v.get("admitted") {
        return Ok(Verdict::Admitted(Admitted {
            leased: a["leased"].as_bool().unwrap_or(false),
            more: count(&a["more"], "more")?.unwrap_or(0),
            until: number(&a["until"]),
        }));
    }
    match v.get("refused") {
        Some(r) => Ok(Verdict::Refused(refusal(r)?)),
        None => Err(format!("not a verdict: {v}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::{Limits, Rate, Scoped};

    /// What is written (derived) reads back (by hand) as it was.
    #[test]
    fn what_is_written_reads_back() {
        let l = Limits::new()
            .rate(3, std::time::Duration::from_secs(60))
            .held(2);
        let refusal_ = Refusal {
            limit: Kind::Daily,
            scope: "tool".into(),
            tool: "t".into(),
            max: 9,
            period: None,
            retry_after: 4,
            retry_at: 44,
        };
        let asks = [
            Ask::Admit(Admit {
                tool: "t".into(),
                lease: "l1".into(),
                new: false,
                limits: Applied {
                    all: l,
                    tool: Limits::new().daily(7),
                },
                lease_ms: 60_000,
                want: 3,
            }),
            Ask::Notes {
                notes: vec![
                    Note::Release("l1".into()),
                    Note::Held {
                        call: "c".into(),
                        tool: "t".into(),
                        until: 5,
                    },
                    Note::Waiting {
                        call: "w".into(),
                        tool: "t".into(),
                        until: 0,
                    },
                ],
            },
            Ask::Usage {
                limits: Scoped {
                    all: l,
                    tools: [("t".to_string(), l)].into(),
                },
            },
            Ask::Raise {
                limits: Scoped::default(),
                raise: Scoped {
                    all: l,
                    tools: Default::default(),
                },
            },
        ];
        for a in asks {
            let written = serde_json::to_value(&a).expect("written");
            assert_eq!(
                format!("{:?}", ask(&written).expect("read back")),
                format!("{a:?}")
            );
        }
        for v in [
            Verdict::Refused(refusal_.clone()),
            Verdict::Admitted(Admitted {
                leased: true,
                more: 4,
                until: 9,
            }),
        ] {
            let written = serde_json::to_value(&v).expect("written");
            assert_eq!(verdict(&written).expect("read back"), v);
        }
        let written = serde_json::to_value(&refusal_).expect("written");
        assert_eq!(refusal(&written).expect("read back"), refusal_);
        assert_eq!(
            limits(&serde_json::json!({"rate": "5/m"}))
                .expect("reads")
                .rate,
            Some(Rate { max: 5, per_s: 60 })
        );
        assert!(limits(&serde_json::json!({"hled": 1})).is_err());
        assert!(limits(&serde_json::json!({"held": -1})).is_err());
    }
}
