/* "common/resource.h" is common/resource/resource.h: the spelling stays, the file lives in its layer */
#include "../../common/resource/resource.h"
