/* "common/yaml.h" is common/base/yaml.h: the spelling stays, the file lives in its layer */
#include "../../common/base/yaml.h"
