//! Text utilities (CONTRACT.md §1.7, §2.18, §3.7–3.9, §3.14, §3.16–3.18).
