//! One interface over this project's engine and the engines it is measured against.
