/* "common/cron.h" is common/base/cron.h: the spelling stays, the file lives in its layer */
#include "../../common/base/cron.h"
