//! The page cache against the block layer, without an engine.
