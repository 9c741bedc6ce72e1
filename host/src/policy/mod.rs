//! Policy runtime.
