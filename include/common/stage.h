/* "common/stage.h" is common/stage/stage.h: the spelling stays, the file lives in its layer */
#include "../../common/stage/stage.h"
