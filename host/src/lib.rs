//! toolhost
