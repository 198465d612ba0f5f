//! Dashboard integration tests: routes and roles, CSRF, sessions and login limits, the review workflow, audit tampering, replay frames, and a real browser.

mod audit;
mod cache;
mod common;
mod frames;
mod lake;
mod review;
mod routes;
mod security;
