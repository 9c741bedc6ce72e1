//! The operator's channel in the simulation: a person's inbox that answers
//! 500 at random while the weather is rough (or always, when it is down for
//! good), and records every notice it was handed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use async_trait::async_trait;
use nomos_continue::agent::{AgentError, Operator};
use nomos_continue::store::OperatorNotice;
use rand::Rng;

use super::agent::Dice;
use super::lock;

pub struct SimOperator {
    dice: Dice,
    /// Drain mode: every notice is accepted (unless down for good).
    pub calm: AtomicBool,
    pub down_for_good: bool,
    /// The key of every notice handed over, accepted or not.
    pub keys: Mutex<Vec<String>>,
    pub faults: Mutex<usize>,
}

impl SimOperator {
    pub fn new(seed: u64, down_for_good: bool) -> Self {
        Self {
            dice: Dice::new(seed ^ 0x0b5e_55ed),
            calm: AtomicBool::new(false),
            down_for_good,
            keys: Mutex::default(),
            faults: Mutex::default(),
        }
    }
}

#[async_trait]
impl Operator for SimOperator {
    async fn tell(&self, notice: &OperatorNotice) -> Result<(), AgentError> {
        let key = &notice.idempotency_key;
        lock(&self.keys).push(key.clone());
        let mut dice = self.dice.next(key);
        let refused =
            self.down_for_good || (!self.calm.load(Ordering::SeqCst) && dice.gen_bool(0.3));
        if refused {
            *lock(&self.faults) += 1;
            return Err(AgentError::Retryable(
                "HTTP 500 from the operator's inbox".into(),
            ));
        }
        Ok(())
    }
}
