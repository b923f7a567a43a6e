/* "common/kube_impl.h" is common/kube/kube_impl.h: the spelling stays, the file lives in its layer */
#include "../../common/kube/kube_impl.h"
