pub mod client;
mod data;
mod protocol;
mod timing;
