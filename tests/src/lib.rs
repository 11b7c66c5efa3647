//! Integration tests for toolhost live in `all/`.
