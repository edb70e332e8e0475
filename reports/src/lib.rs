//! The results format and the charts and tables made from it. Works from JSON alone.
