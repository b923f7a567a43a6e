/* "common/stage_ctl.h" is common/stage/stage_ctl.h: the spelling stays, the file lives in its layer */
#include "../../common/stage/stage_ctl.h"
