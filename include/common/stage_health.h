/* "common/stage_health.h" is common/stage/stage_health.h: the spelling stays, the file lives in its layer */
#include "../../common/stage/stage_health.h"
