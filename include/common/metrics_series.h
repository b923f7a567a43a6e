/* "common/metrics_series.h" is common/base/metrics_series.h: the spelling stays, the file lives in its layer */
#include "../../common/base/metrics_series.h"
