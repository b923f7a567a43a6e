/* "common/stage_impl.h" is common/stage/stage_impl.h: the spelling stays, the file lives in its layer */
#include "../../common/stage/stage_impl.h"
