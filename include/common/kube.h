/* "common/kube.h" is common/kube/kube.h: the spelling stays, the file lives in its layer */
#include "../../common/kube/kube.h"
