//! The service from outside: the HTTP API and its OpenAPI document, the
//! console in a real browser, the agent adapters, the real binary end to
//! end, the demo, the documented flags and README examples, and the
//! layering rules of the house.

#[path = "agent_adapters.rs"]
mod agent_adapters;
#[path = "api.rs"]
mod api;
#[path = "configuration.rs"]
mod configuration;
#[path = "console.rs"]
mod console;
#[path = "demo.rs"]
mod demo;
#[path = "e2e.rs"]
mod e2e;
#[path = "exposure.rs"]
mod exposure;
#[path = "house.rs"]
mod house;
#[path = "openapi.rs"]
mod openapi;
#[path = "readme.rs"]
mod readme;
#[path = "signing_cli.rs"]
mod signing_cli;
