/* "common/metrics.h" is common/base/metrics.h: the spelling stays, the file lives in its layer */
#include "../../common/base/metrics.h"
