/* "common/stage_watch.h" is common/stage/stage_watch.h: the spelling stays, the file lives in its layer */
#include "../../common/stage/stage_watch.h"
