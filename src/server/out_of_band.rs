//! What a call the server keeps gets for URL-mode elicitations
//! ([`Cx::elicit_url`](crate::Cx::elicit_url)): its elicitation ids, and
//! the opening of what its pages sealed.

use std::rc::Rc;

use crate::elicitation::{self, Home};
use crate::engine::OutOfBand;
use crate::server::Server;

/// For the call kept at `home`, asked by `principal`, reached at `origin`.
/// An id names whose page it is: the caller's, or an approver's the tool
/// named (only they, signed in, may open it).
pub(crate) fn out_of_band(server: &Server, home: Home, principal: &str, origin: &str) -> OutOfBand {
    // One copy of the keys for both: made per round of a kept call.
    let ring = Rc::new(server.config.keys.clone());
    let opener = Rc::clone(&ring);
    let principal = principal.to_string();
    OutOfBand {
        // No state key, no id: then no page could be routed to the call
        // either, and the empty id says so to whoever looks.
        id: Rc::new(move |key, approver| {
            let who = approver.unwrap_or(&principal);
            elicitation::id(&ring, &home, key, who).unwrap_or_default()
        }),
        open: Rc::new(move |sealed| elicitation::unseal(&opener, sealed)),
        origin: origin.to_string(),
    }
}
