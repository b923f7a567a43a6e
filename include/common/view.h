/* "common/view.h" is common/resource/view.h: the spelling stays, the file lives in its layer */
#include "../../common/resource/view.h"
