# common/kube/: the Kubernetes API client (requests, informers, lease,
# kubeconfig), attached to a stage's loop.  Includes stage, base.
noinst_LIBRARIES += libdecod_kube.a
libdecod_kube_a_SOURCES = \
	common/kube/kube.c \
	common/kube/kube.h \
	common/kube/kube_client.c \
	common/kube/kube_config.c \
	common/kube/kube_impl.h \
	common/kube/kube_informer.c \
	common/kube/kube_lease.c \
	common/kube/kube_objects.c
