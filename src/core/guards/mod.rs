//! Shell-command guards (CONTRACT.md §2.11, §2.16, §3.1–3.6, §3.15).
