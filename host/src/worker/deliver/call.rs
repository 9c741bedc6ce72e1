//! One claimed delivery's call: checked against its lease, its era and
//! the standby fence at the moment it is made, in a `deliver` span whose
//! context it carries, as a task of its own.

use tracing::Instrument;

use super::record::NotAccepted;
use super::{fence, trace, Deliverer, Finished, Ready};
use crate::agent::{AgentError, Notice};
use crate::store::{Claim, Delivery, DeliveryKind, LinkTrace};
use crate::worker::notices;

impl Deliverer {
    /// One delivery's call as a task of its own: an accepted call's record
    /// is the recorder's; anything else is recorded here.
    pub(super) async fn call_task(
        self,
        delivery: Delivery,
        lease: (Claim, u64),
        ready: Result<Ready, String>,
        trace: Option<LinkTrace>,
        gate: fence::Gate,
    ) -> Finished {
        let claim = lease.0;
        match self.call(&delivery, lease, ready, trace, gate).await {
            Ok(()) => Finished::Accepted(claim),
            Err(not) => {
                let recorded = self.record(&delivery, claim, not).await;
                self.lock_in_flight().remove(&claim);
                Finished::Recorded(recorded)
            }
        }
    }

    /// Why a delivery is not called at all: its earlier claims recorded no
    /// result so often that the worker delivering it keeps dying mid-call.
    pub(super) fn lost_claims(&self, delivery: &Delivery) -> Option<AgentError> {
        let lost = delivery.claims - 1 - delivery.attempts;
        (lost >= self.config.max_lost_claims).then(|| {
            AgentError::Permanent(format!(
                "claimed {lost} times without a recorded result: the worker delivering it keeps dying mid-call"
            ))
        })
    }

    /// Calls the agent for one claimed delivery, in a `deliver` span under
    /// `trace` whose context the call carries, if `claim` still holds its
    /// lease at the moment of the call (see [`Self::still_held`]) and the
    /// store still uses the primary of `era`, the one it was claimed on,
    /// and the standby fence's `gate` lets it through. After the fence kept
    /// the call waiting ([`fence::Gate::OpenAfterWaiting`], its claim
    /// checked the window before), a continuation's window is read once
    /// more and one that closed meanwhile is dropped with one notice, not
    /// sent.
    ///
    /// Why the era: the standby fence proves a claim is on the standbys by
    /// asking the primary. After a switch to a promoted standby the look
    /// asks the new primary, which may lack the claim (committed last on the
    /// old one) and still confirm; a call sent then has a plan the database
    /// no longer holds, which the next plan may fold under another key. So
    /// a call whose claim is of an older era is not made; it is tried again
    /// after its backoff, under its claim if the new primary has it.
    async fn call(
        &self,
        delivery: &Delivery,
        (claim, era): (Claim, u64),
        ready: Result<Ready, String>,
        trace: Option<LinkTrace>,
        gate: fence::Gate,
    ) -> Result<(), NotAccepted> {
        let window_again = match gate {
            fence::Gate::Held(why) => {
                return Err(NotAccepted::Failed(AgentError::unavailable(why)))
            }
            fence::Gate::Open => false,
            fence::Gate::OpenAfterWaiting => true,
        };
        if let Some(error) = self.lost_claims(delivery) {
            return Err(NotAccepted::Failed(error));
        }
        // The executions could not be read: a shortage, tried again.
        let ready = ready.map_err(|e| {
            NotAccepted::NotMade(AgentError::unavailable(format!(
                "could not load the executions: {e}"
            )))
        })?;
        if delivery.kind == DeliveryKind::Continuation {
            match self.loads.observe(self.redecide(delivery).await) {
                Ok(Some(reason)) => return Err(NotAccepted::Dropped(reason)),
                Ok(None) => {}
                Err(e) => {
                    return Err(NotAccepted::NotMade(AgentError::unavailable(format!(
                        "could not ask the policy before the retry: {e}"
                    ))))
                }
            }
        }
        if window_again && delivery.kind == DeliveryKind::Continuation {
            let window = self.store.window(delivery.session_id).await;
            match self.loads.observe(window) {
                Ok(w) if w.as_ref().is_some_and(|w| w.is_open_at(self.clock.now())) => {}
                Ok(w) => {
                    return Err(NotAccepted::Dropped(notices::window_closed_reason(
                        w.as_ref(),
                    )))
                }
                Err(e) => {
                    return Err(NotAccepted::NotMade(AgentError::unavailable(format!(
                        "could not read the window again after the standby fence: {e}"
                    ))))
                }
            }
        }
        if !self.still_held(&[claim]).await.contains(&claim) {
            return Err(NotAccepted::NotHeld);
        }
        // No await from here to the call: the era is the one it goes out in.
        if self.store.primary_era() != era {
            return Err(NotAccepted::NotMade(AgentError::unavailable(
                "the database primary changed after this delivery was claimed; \
                 the call waits for its retry",
            )));
        }
        let span = trace::span(delivery, trace.as_ref());
        let (traceparent, tracestate) = span.headers();
        let call = async {
            match ready {
                Ready::Continuation(mut continuation) => {
                    (continuation.traceparent, continuation.tracestate) = (traceparent, tracestate);
                    self.agent.continue_session(&continuation).await
                }
                Ready::Notice => {
                    let notice = Notice {
                        session_id: delivery.session_id,
                        idempotency_key: delivery.idempotency_key.clone(),
                        message: delivery.note.clone(),
                        traceparent,
                        tracestate,
                    };
                    self.agent.notify(&notice).await
                }
            }
        };
        let result = call.instrument(span.log_span()).await;
        trace::end(span, &result);
        result.map_err(NotAccepted::Failed)
    }
}
