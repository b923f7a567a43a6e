/* "common/backoff.h" is common/base/backoff.h: the spelling stays, the file lives in its layer */
#include "../../common/base/backoff.h"
