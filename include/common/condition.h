/* "common/condition.h" is common/resource/condition.h: the spelling stays, the file lives in its layer */
#include "../../common/resource/condition.h"
