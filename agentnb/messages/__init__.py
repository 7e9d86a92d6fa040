"""Messages: the conversation a run sends and keeps, and the JSON forms of its values.

Owns the message types (:mod:`~agentnb.messages.types`), the JSON codec of event fields
(:mod:`~agentnb.messages.codec`), bounded reading of a model's JSON
(:mod:`~agentnb.messages.jsonsafe`) and the fast ``__init__`` of frozen dataclasses
(:mod:`~agentnb.messages.fastinit`). The bottom layer: it imports nothing from agentnb but
:mod:`agentnb.errors`.

>>> from agentnb.messages import UserMessage, message_from_dict
>>> message_from_dict(UserMessage("hi").to_dict()) == UserMessage("hi")
True
"""

from agentnb.messages.types import (
    JSON,
    AssistantMessage,
    Image,
    Message,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
    coerce_messages,
    message_from_dict,
)

__all__ = [
    "JSON",
    "AssistantMessage",
    "Image",
    "Message",
    "SystemMessage",
    "ToolCall",
    "ToolMessage",
    "Usage",
    "UserMessage",
    "coerce_messages",
    "message_from_dict",
]
