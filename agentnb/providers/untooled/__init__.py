"""UnTooled: tool calling simulated in the prompt, for models that can only write text.

The layer (:mod:`.layer`), the reply parser (:mod:`.parse`) and the prompt (:mod:`.prompt`,
its template ``prompt.txt``) live here; any text-only :class:`~agentnb.providers.Provider` can be wrapped.
"""

from agentnb.providers.untooled.layer import UnTooled
from agentnb.providers.untooled.prompt import (
    TEMPLATE_FILE,
    PromptTemplate,
    call_json,
    default_template,
    render_arguments,
    render_parameters,
    type_name,
)

__all__ = [
    "TEMPLATE_FILE",
    "PromptTemplate",
    "UnTooled",
    "call_json",
    "default_template",
    "render_arguments",
    "render_parameters",
    "type_name",
]
