//! The accounts controller actor (kind `accounts-controller`), on a node standing alone:
//! every namespace gets its `default` ServiceAccount and its `kube-root-ca.crt` ConfigMap
//! (`plan.rs`), as kube-controller-manager's serviceaccount controller and root CA
//! publisher give them to a cluster; and at each start the default RBAC policy
//! (`podvisor_auth::bootstrap`) is created where missing.
//!
//! Three reflectors (namespaces; ServiceAccounts named `default`; ConfigMaps named
//! `kube-root-ca.crt`) feed caches; any change plans again and carries out what is missing
//! and not already under way. A write that failed is planned again at the next change or
//! within [`RESYNC`].
//!
//! Messages: none of its own; it handles its reflectors' [`Reflected`] deliveries.
//!
//! Restart: nothing is kept; the caches are listed again and the plan made from them.

mod plan;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ServiceAccount};
use podvisor_actors::{StartInfo, SupervisedActor};
use podvisor_client::{Api, Client, Error, ListParams, Object, PostParams};
use podvisor_machinery::cache::Cache;
use podvisor_machinery::reflector::{Reflected, Reflector};
use serde::Serialize;
use tracing::{info, warn};

pub use plan::{Action, CA_KEY, DEFAULT_ACCOUNT, ROOT_CA, plan, root_ca};

/// How often the plan is made again without a change (a write that failed).
pub const RESYNC: Duration = Duration::from_secs(30);

pub struct AccountsController {
    namespaces_view: Reflector<Namespace>,
    accounts_view: Reflector<ServiceAccount>,
    root_cas_view: Reflector<ConfigMap>,
    namespaces: Cache<Namespace>,
    accounts: Cache<ServiceAccount>,
    root_cas: Cache<ConfigMap>,
    client: Client,
    ca_pem: Arc<str>,
    in_flight: HashSet<Action>,
    writes: u64,
    failed_writes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AccountsControllerSummary {
    pub namespaces: usize,
    pub in_flight: usize,
    pub writes: u64,
    pub failed_writes: u64,
}

/// The outcome of one write.
struct Done(Action, Result<(), Error>);

impl Message for Done {
    type Result = ();
}

impl AccountsController {
    pub fn new(client: Client, ca_pem: &str) -> Self {
        let named = |n: &str| ListParams::default().field_equals("metadata.name", n);
        Self {
            namespaces_view: Reflector::new(Api::all(client.clone()), ListParams::default()),
            accounts_view: Reflector::new(Api::all(client.clone()), named(DEFAULT_ACCOUNT)),
            root_cas_view: Reflector::new(Api::all(client.clone()), named(ROOT_CA)),
            namespaces: Cache::new(),
            accounts: Cache::new(),
            root_cas: Cache::new(),
            client,
            ca_pem: ca_pem.into(),
            in_flight: HashSet::new(),
            writes: 0,
            failed_writes: 0,
        }
    }

    fn sync(&mut self, ctx: &mut Context<Self>) {
        let namespaces: Vec<&Namespace> = self.namespaces.values().map(|n| n.as_ref()).collect();
        let with_account: HashSet<String> = self
            .accounts
            .values()
            .filter_map(|a| a.metadata.namespace.clone())
            .collect();
        let cas: HashMap<String, &ConfigMap> = self
            .root_cas
            .values()
            .filter_map(|c| Some((c.metadata.namespace.clone()?, c.as_ref())))
            .collect();
        for action in plan(&namespaces, &with_account, &cas, &self.ca_pem) {
            if self.in_flight.insert(action.clone()) {
                let write = perform(self.client.clone(), action.clone(), self.ca_pem.clone());
                ctx.spawn(
                    write
                        .into_actor(self)
                        .map(move |r, _, ctx: &mut Context<Self>| ctx.notify(Done(action, r))),
                );
            }
        }
    }
}

/// Creates `o` unless it exists already.
async fn create<K: Object>(api: Api<K>, o: K) -> Result<(), Error> {
    match api.create(&PostParams::default(), o).await {
        Ok(_) | Err(Error::AlreadyExists { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

async fn perform(client: Client, action: Action, ca_pem: Arc<str>) -> Result<(), Error> {
    match action {
        Action::CreateAccount { namespace } => {
            let mut sa = ServiceAccount::default();
            sa.metadata.name = Some(DEFAULT_ACCOUNT.into());
            create(Api::namespaced(client, &namespace), sa).await
        }
        Action::CreateRootCa { namespace } => {
            create(
                Api::namespaced(client, &namespace),
                root_ca(&namespace, &ca_pem),
            )
            .await
        }
        Action::UpdateRootCa { namespace } => {
            let api: Api<ConfigMap> = Api::namespaced(client, &namespace);
            api.replace(&PostParams::default(), root_ca(&namespace, &ca_pem))
                .await
                .map(|_| ())
        }
    }
}

/// The default RBAC policy, where missing.
async fn bootstrap(client: Client) {
    for role in podvisor_auth::bootstrap::cluster_roles() {
        if let Err(e) = create(Api::all(client.clone()), role).await {
            warn!(error = %e, "cannot create a default ClusterRole");
        }
    }
    for binding in podvisor_auth::bootstrap::cluster_role_bindings() {
        if let Err(e) = create(Api::all(client.clone()), binding).await {
            warn!(error = %e, "cannot create a default ClusterRoleBinding");
        }
    }
}

impl Actor for AccountsController {
    type Context = Context<Self>;
}

impl SupervisedActor for AccountsController {
    const KIND: &'static str = "accounts-controller";
    type Summary = AccountsControllerSummary;

    fn rebuild(&mut self, ctx: &mut Context<Self>, start: &StartInfo<Self>) {
        self.namespaces_view.start(ctx, start.me.recipient());
        self.accounts_view.start(ctx, start.me.recipient());
        self.root_cas_view.start(ctx, start.me.recipient());
        ctx.spawn(bootstrap(self.client.clone()).into_actor(self));
        ctx.run_interval(RESYNC, |act, ctx| act.sync(ctx));
    }

    fn summary(&self) -> AccountsControllerSummary {
        AccountsControllerSummary {
            namespaces: self.namespaces.len(),
            in_flight: self.in_flight.len(),
            writes: self.writes,
            failed_writes: self.failed_writes,
        }
    }
}

impl Handler<Done> for AccountsController {
    type Result = ();
    fn handle(&mut self, Done(action, result): Done, _: &mut Context<Self>) {
        self.in_flight.remove(&action);
        self.writes += 1;
        match result {
            Ok(()) => info!(?action, "made"),
            Err(e) => {
                self.failed_writes += 1;
                warn!(?action, error = %e, "cannot make it; will try again");
            }
        }
    }
}

macro_rules! reflects {
    ($kind:ty, $view:ident, $cache:ident) => {
        impl Handler<Reflected<$kind>> for AccountsController {
            type Result = ();
            fn handle(&mut self, msg: Reflected<$kind>, ctx: &mut Context<Self>) {
                if let Some(u) = self.$view.accept(msg, ctx) {
                    self.$cache.apply(u);
                    self.sync(ctx);
                }
            }
        }
    };
}

reflects!(Namespace, namespaces_view, namespaces);
reflects!(ServiceAccount, accounts_view, accounts);
reflects!(ConfigMap, root_cas_view, root_cas);
