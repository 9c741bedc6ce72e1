//! The service from outside: the HTTP API and its OpenAPI document, the
//! console in a real browser, the agent adapters, the real binary end to
//! end, the demo, the documented flags and README examples, what an
//! operator monitors (metrics, alerting rules, dashboard) and that no
//! secret reaches the log, the layering rules of the house, and the
//! OpenAPI document as other people's tools read it (a generated Python
//! client, schemathesis), the protocols (A2A, MCP tasks) against the real
//! SDKs' peers, and the runtime's clients of `clients/` (their tests and
//! their examples) against the real binary.

mod agent_adapters;
mod api;
mod clients;
mod configuration;
mod console;
mod console_page;
mod demo;
mod e2e;
mod exposure;
mod house;
mod load;
mod observability;
mod openapi;
mod operator_channel;
mod peers;
mod protocols;
mod read_commands;
mod readme;
mod seams;
mod signing_cli;
mod trace_context;
mod webhooks;
