//! For tests (feature `testing`): the store's typed writes from JSON bodies, decoded as
//! the API decodes them, so a test reads like the request it stands for.

use podvisor_client::{Error, PostParams, Subresource};
use serde_json::Value;

use crate::{Change, Resource, Store};

/// The store's typed writes, from JSON bodies (decoded as the API decodes them).
pub trait JsonWrites {
    fn create_v(
        &mut self,
        res: &Resource,
        body: Value,
        ns: Option<&str>,
        opts: PostParams,
    ) -> Result<Vec<Change>, Error>;
    fn update_v(
        &mut self,
        res: &Resource,
        body: Value,
        status_only: bool,
        opts: PostParams,
    ) -> Result<Vec<Change>, Error>;
}

impl JsonWrites for Store {
    fn create_v(
        &mut self,
        res: &Resource,
        body: Value,
        ns: Option<&str>,
        opts: PostParams,
    ) -> Result<Vec<Change>, Error> {
        let o = crate::decode::object(res, body, false)?;
        self.create(res, o, ns, opts)
    }

    fn update_v(
        &mut self,
        res: &Resource,
        body: Value,
        status_only: bool,
        opts: PostParams,
    ) -> Result<Vec<Change>, Error> {
        let o = crate::decode::object(res, body, false)?;
        let sub = if status_only {
            Subresource::Status
        } else {
            Subresource::Main
        };
        self.update(res, o, sub, opts)
    }
}
