//! The one table of the kinds podvisor serves and stores. Everything else about a kind
//! (its group, version, plural, scope and `kind` string) comes from k8s-openapi's
//! `Resource` for its type; the table adds only what k8s-openapi does not say: the
//! singular and short names discovery shows, and whether `status` is a subresource and a
//! spec change bumps `metadata.generation`.
//!
//! [`for_each_kind!`] hands the table to a macro of the caller's, so each crate that needs
//! a per-kind list (the `Kind` enum here, the client's `AnyObject`, the store's
//! `Resource`) makes it from this one. Adding a kind is a row here.

/// Calls `$then! { Kind => path::Type, "singular", [short names], has_status, has_spec; ... }`
/// with the table.
#[macro_export]
macro_rules! for_each_kind {
    ($then:ident) => {
        $then! {
            Pod => ::k8s_openapi::api::core::v1::Pod, "pod", ["po"], true, true;
            Node => ::k8s_openapi::api::core::v1::Node, "node", ["no"], true, true;
            Namespace => ::k8s_openapi::api::core::v1::Namespace, "namespace", ["ns"], true, true;
            ConfigMap => ::k8s_openapi::api::core::v1::ConfigMap, "configmap", ["cm"], false, false;
            Secret => ::k8s_openapi::api::core::v1::Secret, "secret", [], false, false;
            Event => ::k8s_openapi::api::core::v1::Event, "event", ["ev"], false, false;
            ReplicaSet => ::k8s_openapi::api::apps::v1::ReplicaSet, "replicaset", ["rs"], true, true;
            ServiceAccount => ::k8s_openapi::api::core::v1::ServiceAccount, "serviceaccount", ["sa"], false, false;
            Role => ::k8s_openapi::api::rbac::v1::Role, "role", [], false, false;
            RoleBinding => ::k8s_openapi::api::rbac::v1::RoleBinding, "rolebinding", [], false, false;
            ClusterRole => ::k8s_openapi::api::rbac::v1::ClusterRole, "clusterrole", [], false, false;
            ClusterRoleBinding => ::k8s_openapi::api::rbac::v1::ClusterRoleBinding, "clusterrolebinding", [], false, false;
            Deployment => ::k8s_openapi::api::apps::v1::Deployment, "deployment", ["deploy"], true, true;
            Job => ::k8s_openapi::api::batch::v1::Job, "job", [], true, true;
        }
    };
}

/// Whether a k8s-openapi scope is a namespace's.
pub trait Scope {
    const NAMESPACED: bool;
}

impl Scope for k8s_openapi::NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl Scope for k8s_openapi::ClusterResourceScope {
    const NAMESPACED: bool = false;
}

macro_rules! kinds {
    ($($kind:ident => $ty:ty, $singular:literal, [$($short:literal),*], $status:literal, $spec:literal;)*) => {
        /// The object kinds podvisor serves and stores.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
        pub enum Kind {
            $($kind),*
        }

        impl Kind {
            pub const ALL: [Kind; <[&str]>::len(&[$(stringify!($kind)),*])] = [$(Kind::$kind),*];

            /// `Pod`, `ReplicaSet`: the object's `kind`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Kind::$kind => <$ty as k8s_openapi::Resource>::KIND),*
                }
            }

            /// `""` for the core group, `apps`, `rbac.authorization.k8s.io`.
            pub const fn group(self) -> &'static str {
                match self {
                    $(Kind::$kind => <$ty as k8s_openapi::Resource>::GROUP),*
                }
            }

            pub const fn version(self) -> &'static str {
                match self {
                    $(Kind::$kind => <$ty as k8s_openapi::Resource>::VERSION),*
                }
            }

            /// `v1`, `apps/v1`.
            pub const fn api_version(self) -> &'static str {
                match self {
                    $(Kind::$kind => <$ty as k8s_openapi::Resource>::API_VERSION),*
                }
            }

            /// The resource's name in URLs: `pods`, `replicasets`.
            pub const fn plural(self) -> &'static str {
                match self {
                    $(Kind::$kind => <$ty as k8s_openapi::Resource>::URL_PATH_SEGMENT),*
                }
            }

            pub const fn singular(self) -> &'static str {
                match self {
                    $(Kind::$kind => $singular),*
                }
            }

            pub const fn short_names(self) -> &'static [&'static str] {
                match self {
                    $(Kind::$kind => &[$($short),*]),*
                }
            }

            /// Whether objects of this kind live in a namespace.
            pub const fn namespaced(self) -> bool {
                match self {
                    $(Kind::$kind => <<$ty as k8s_openapi::Resource>::Scope as Scope>::NAMESPACED),*
                }
            }

            /// Whether `status` is a subresource: the main resource's writes keep the
            /// stored status and status writes keep everything else.
            pub const fn has_status(self) -> bool {
                match self {
                    $(Kind::$kind => $status),*
                }
            }

            /// Whether a spec change bumps `metadata.generation`.
            pub const fn has_spec(self) -> bool {
                match self {
                    $(Kind::$kind => $spec),*
                }
            }
        }
    };
}

for_each_kind!(kinds);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_facts_come_from_the_types() {
        assert_eq!(Kind::ALL.len(), 14);
        assert_eq!(
            (Kind::Pod.as_str(), Kind::Pod.group(), Kind::Pod.plural()),
            ("Pod", "", "pods")
        );
        assert_eq!(Kind::ReplicaSet.api_version(), "apps/v1");
        assert_eq!(Kind::ClusterRole.group(), "rbac.authorization.k8s.io");
        assert_eq!(Kind::Job.plural(), "jobs");
        assert!(!Kind::Node.namespaced() && !Kind::ClusterRoleBinding.namespaced());
        assert!(Kind::Secret.namespaced() && Kind::RoleBinding.namespaced());
        assert_eq!(Kind::Deployment.short_names(), ["deploy"]);
    }
}
