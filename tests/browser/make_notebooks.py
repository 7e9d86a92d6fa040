"""Writes tests/browser/notebooks/*.ipynb (run it after editing the cells below)."""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from untrusted_payloads import ALL

HERE = Path(__file__).parent / "notebooks"

SETUP = '''\
%load_ext agentnb
import io
from PIL import Image as PILImage, ImageDraw
from agentnb import tool, ToolContext, Usage
from agentnb.testing import ScriptedProvider, Streamed, call

@tool
def weather(city: str) -> str:
    """Today's forecast for a city.

    Args:
        city: the city name
    """
    hours = "\\n".join(f"{h:02d}:00  {10 + h % 5} °C  wind {3 + h % 4} m/s" for h in range(6, 22))
    return f"{city}: 14 °C, light rain, clearing in the evening.\\nHourly:\\n{hours}"

@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

@tool
def chart(title: str, ctx: ToolContext) -> str:
    """Draw a small bar chart and show it to the model.

    Args:
        title: the chart title
    """
    img = PILImage.new("RGB", (220, 110), "white")
    d = ImageDraw.Draw(img)
    for i, h in enumerate([40, 70, 55, 90, 30]):
        d.rectangle([15 + i * 40, 100 - h, 40 + i * 40, 100], fill=(9, 105, 218))
    d.text((10, 4), title, fill="black")
    ctx.attach_image(img)
    return "chart drawn (220x110 PNG)"
'''

TRACE = """\
city = "Paris"
model = ScriptedProvider(
    [
        call("weather", city="Paris"),
        [call("weather", city="Paris"), call("add", a=14, b=3)],
        call("chart", title="Rain in Paris, mm"),
        Streamed(["**Paris**: 14 °C with light rain, ", "clearing in the evening.\\n\\n",
                  "| hour | °C |\\n|---|---|\\n| 09:00 | 14 |\\n| 18:00 | 13 |\\n\\n",
                  "14 + 3 = **17**; an umbrella is $5 and a coat $60. The chart is attached."]),
    ],
    delay=0.4,
    usage=Usage(182, 24),
)"""

TRACE_RUN = """\
%%agent -p model --stream --out traced
What's the weather in {city}? Add 3 to the temperature and draw a chart."""

FOLLOW = """\
model3 = ScriptedProvider(["Tomorrow: **dry**, 16 °C."], delay=0.2)
%agent -p model3 -s "Answer in one line." And tomorrow?"""

STEP = """\
model2 = ScriptedProvider([call("add", a=2, b=3), "The tool says **42**."], delay=0.2, usage=Usage(64, 9))"""

STEP_RUN = """\
%%agent -p model2 --step --new --out stepped
What is 2 + 3?"""

WHILE_PAUSED = """\
# The cell above returned at once; the kernel is free while the debugger waits for a click.
pause = await _agent_debugger.next_pause()
print("kernel is free while", pause.describe())"""

SLOW = """\
%load_ext agentnb
import asyncio
from agentnb import tool
from agentnb.testing import ScriptedProvider, call

@tool
def count(n: int) -> int:
    \"\"\"Count one step.\"\"\"
    return n

@tool
async def nap(seconds: float) -> str:
    \"\"\"Sleep a while (a tool that takes long).\"\"\"
    await asyncio.sleep(seconds)
    return "rested"

slow = ScriptedProvider([call("count", n=1), call("count", n=2), call("nap", seconds=60), "never reached"], delay=0.5)"""

SLOW_RUN = """\
%%agent -p slow -n 30 --out stopped_run
Count to thirty, slowly."""

AFTER = """print("after stop:", stopped_run.stop_reason, stopped_run.tool_calls)"""


VOILA_TRACE = """\
%%agent -p model --out traced
What's the weather in {city}? Add 3 to the temperature and draw a chart."""

VOILA_STEP = """\
# In Voila widgets connect once every cell has run: the debugger runs as a background task.
model2 = ScriptedProvider([call("add", a=2, b=3), "2 + 3 = **5**"], delay=0.2)
%agent -p model2 --step --new What is 2 + 3?"""


HIGHLIGHT_PY = """\
x = 1 if True and not False else 2  # Python: keywords highlighted"""

HIGHLIGHT_AGENT = """\
%%agent --tools none
Is it raining and is it cold? If not, what is **the** forecast?"""


HOSTILE = f'''\
%load_ext agentnb
from agentnb import tool
from agentnb.testing import ScriptedProvider, Streamed, call, tool_chunks

# A prompt injection: every payload would set document.title or fetch from evil.example if live.
PAYLOAD = {ALL!r}

@tool
def fetch_page(url: str) -> str:
    """Fetch a web page (here: a hostile one)."""
    return PAYLOAD

@tool
def parse(text: str) -> str:
    """Parse a page (here: it fails, with the page in its error)."""
    raise ValueError(text)

evil = ScriptedProvider(
    [
        Streamed([PAYLOAD[:120], PAYLOAD[120:], *tool_chunks(0, "fetch_page", '{{"url": "http://evil.example/PWN"}}')]),
        call("parse", text=PAYLOAD),
        Streamed([PAYLOAD[:200], PAYLOAD[200:]]),
    ],
    delay=0.05,
)'''

HOSTILE_RUN = """\
%%agent -p evil --stream --out hacked
Summarize http://evil.example/ for me."""

HOSTILE_REPLAY = """\
from agentnb.notebook.trace.widget import TraceWidget
TraceWidget.replay(hacked)"""


DECIDE = """\
from agentnb.events import CallDecision
from agentnb.providers.base import Completion

why = CallDecision(0, "answer", "no tool fits the request", ranking=(("weather", -0.31), ("chart", -3.07), ("add", -12.5)))
chooser = ScriptedProvider([Completion("Why did the chart cross the road?", events=(why,))])
%agent -p chooser --new Tell me a joke."""


APPROVAL = '''\
%load_ext agentnb
from agentnb import Agent, tool
from agentnb.notebook.trace.widget import TraceWidget
from agentnb.testing import ScriptedProvider, call

ran = []  # what the tool really did

@tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file (here: only noted).

    Args:
        path: the file to delete
    """
    ran.append(path)
    return f"deleted {path}"

model = ScriptedProvider(
    [
        call("delete_file", path="/tmp/old.log", id="c1"),
        call("delete_file", path="/etc/passwd", id="c2"),
        call("delete_file", path="/home/me/notes.txt", id="c3"),
        "Deleted /tmp/old.log and /tmp/notes.txt; /etc/passwd was refused.",
    ],
    delay=0.1,
)'''

APPROVAL_RUN = """\
%%agent -p model --out approved
Clean up: delete /tmp/old.log, /etc/passwd and /home/me/notes.txt."""

APPROVAL_AFTER = """\
print("ran:", ran)
print("model read:", [m.content for m in model.requests[2].messages if m.role == "tool"])
print("decisions:", [(e.call_id, e.decision, e.by) for e in approved.events if e.kind == "approval_decided"])"""

APPROVAL_SYNC = """\
# A blocking agent.run() in the cell: the widget's buttons still reach the run while it waits.
w = TraceWidget()
display(w)
sync_model = ScriptedProvider([call("delete_file", path="/tmp/sync.txt"), "Deleted /tmp/sync.txt."], delay=0.1)
sync_result = Agent(sync_model, tools=[delete_file]).run("delete /tmp/sync.txt", on_event=w)
print("run() returned:", sync_result.stop_reason, "|", sync_result.output, "|", ran[-1])"""

APPROVAL_SYNC_STOP = """\
w2 = TraceWidget()
display(w2)
stop_model = ScriptedProvider([call("delete_file", path="/tmp/never.txt"), "never"], delay=0.1)
stopped = Agent(stop_model, tools=[delete_file]).run("delete /tmp/never.txt", on_event=w2)
print("stopped run() returned:", stopped.stop_reason, "| ran never.txt:", "/tmp/never.txt" in ran)"""

KERNEL_CODE = """\
%load_ext agentnb
from agentnb.testing import ScriptedProvider, call

prices = [3.5, 4.0, 2.25]
model = ScriptedProvider(
    [
        call("run_python", code="doubled = [p * 2 for p in prices]\\nprint('<b>not bold</b>')\\nsum(doubled)", id="k1"),
        call("run_python", code="second = 'approved by me'", id="k2"),
        call("run_python", code="third = 'approved with the rest'", id="k3"),
        "Tripled, then noted.",
    ],
    delay=0.1,
)"""

KERNEL_CODE_RUN = """\
%%agent -p model --kernel code --out coded
Double the prices."""

KERNEL_CODE_AFTER = """\
print("ns:", doubled, second, third)
print("decisions:", [(e.call_id, e.decision) for e in coded.events if e.kind == "approval_decided"])"""

EVAL_SETUP = """\
%load_ext agentnb
from agentnb import Agent
from agentnb.evaluation import aevaluate, contains, evaluate
from agentnb.testing import FunctionProvider

slow = Agent(FunctionProvider(lambda messages, tools: "ok", delay=0.25))
cases = [f"case {i}" for i in range(400)]  # 50 s at 2 in flight: only a Stop ends it sooner"""

EVAL_SYNC = """\
ev_sync = evaluate(slow, cases, scorers=[contains("ok")], concurrency=2)
print("evaluate stopped:", ev_sync.stopped, len(ev_sync.rows) < len(cases))"""

EVAL_ASYNC = """\
ev_async = await aevaluate(slow, cases, scorers=[contains("ok")], concurrency=2)
print("aevaluate stopped:", ev_async.stopped, len(ev_async.rows) < len(cases))"""

EVAL_MAGIC = """\
ev_magic = %agent_eval cases slow --concurrency 2
print("agent_eval stopped:", ev_magic.stopped, len(ev_magic.rows) < len(cases))"""

EVAL_VIEWS = """\
from agentnb.evaluation import Scorer, exact, regex

quick = {"tools": Agent(FunctionProvider(lambda m, t: "ok")), "plain": Agent(FunctionProvider(lambda m, t: "no"))}
words = Scorer("words", lambda case, result: len(result.output.split()), gate=False)
wide = evaluate(quick, cases[:6], scorers=[contains("ok"), exact("ok"), regex("o+"), words], progress=False)
display(wide.summary())
wide.view()"""


IMPROVE_SETUP = """\
import asyncio
from agentnb import Agent, improve
from agentnb.testing import FunctionProvider

def cases(tag, n):
    return [{"id": f"{tag}{i}", "input": f"2+2 ({tag}{i})", "expected": "4"} for i in range(n)]

TRAIN, VAL, TEST = cases("t", 4), cases("v", 2), cases("x", 2)
hang = {}  # (prompt, case prefix): how many such runs answer before the next ones never do
reflector_hangs = False

async def student(messages, tools):
    kind = "better" if "digits" in (messages[0].content or "") else "original"
    rule = (kind, str(messages[-1].content).split("(")[1][0])
    if rule in hang:
        if hang[rule] == 0:
            await asyncio.Event().wait()  # only the Stop ends this
        hang[rule] -= 1
    return "4" if kind == "better" else "four"

async def reflect(messages, tools):
    if reflector_hangs:
        await asyncio.Event().wait()
    return "```\\nAnswer in digits.\\n```"

def improved():
    agent = Agent(FunctionProvider(student), system="Answer.")
    return improve(agent, TRAIN, ["exact"], reflector=FunctionProvider(reflect), validation=VAL, test=TEST,
                   budget=40, minibatch=2)"""

IMPROVE_ORIGINAL = """\
hang = {("original", "v"): 1}  # the original's second validation run never answers
first = improved()
print("original stopped:", first.stopped, "|", first.reason)"""

IMPROVE_REFLECTION = """\
hang, reflector_hangs = {}, True  # the reflector never answers
second = improved()
print("reflection stopped:", second.stopped, "|", second.reason)"""

IMPROVE_TEST = """\
hang, reflector_hangs = {("better", "x"): 1}, False  # the best's second test run never answers
third = improved()
print("test stopped:", third.stopped, "|", third.test is not None and len(third.test.rows), "|", third.verdict)"""

IMPROVE_COMPARE = """\
hang = {}
print("compare:", third.compare(finish=False).pairs, "then", third.compare().pairs, "| runs", third.spent)"""


FORK = '''\
%load_ext agentnb
from agentnb import tool
from agentnb.testing import ScriptedProvider, call

ran = []  # what the tool really did

@tool
def weather(city: str) -> str:
    """The weather in a city."""
    ran.append(city)
    return "sunny"

model = ScriptedProvider([call("weather", city="Paris"), "Sunny in Paris.", "Rain in Paris: take a coat."])'''

FORK_RUN = """\
%%agent -p model --tools weather --out first
Weather in Paris?"""

FORK_OPEN = "%agent --fork 0"

FORK_BAR_SETUP = FORK.replace('return "sunny"', 'return {"Paris": "sunny", "Oslo": "snow"}[city]').replace(
    'model = ScriptedProvider([call("weather", city="Paris"), "Sunny in Paris.", "Rain in Paris: take a coat."])',
    "model = ScriptedProvider(\n"
    '    [call("weather", city="Paris"), call("weather", city="Oslo"), "Sunny in Paris, snow in Oslo.",'
    ' "Heavy snow in Oslo: stay in."]\n)',
)

# The last cell: its trace's fork bar stays live (a later cell would freeze it).
FORK_BAR_RUN = """\
%%agent -p model --tools weather
Weather in Paris, then in Oslo?"""

# Forks that survive a save (issue 45, item 11): the forks wait for open.flag (the test makes it),
# so the notebook can be saved while one runs; each fork answers with the next reply.
SAVES_SETUP = '''\
%load_ext agentnb
import asyncio
import os
from agentnb import tool
from agentnb.testing import FunctionProvider, call

@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return {"Paris": "sunny", "Oslo": "snow"}[city]

replies = [call("weather", city="Paris"), call("weather", city="Oslo"), "Sunny in Paris, snow in Oslo."]
forks = ["Heavy snow in Oslo: stay in.", "Nested fork: hail in Oslo.", "Editor fork: fog in Oslo."]

async def answer(messages, tools):
    if replies:
        return replies.pop(0)
    while not os.path.exists("open.flag"):
        await asyncio.sleep(0.05)
    return forks.pop(0)

model = FunctionProvider(answer)'''

SAVES_RUN = """\
%%agent -p model --tools weather
Weather in Paris, then in Oslo?"""


LIVE_SETUP = '''\
import os
import time
from agentnb import Agent, tool
from agentnb.notebook import TraceWidget
from agentnb.testing import ScriptedProvider, call

@tool
def wait_for_gate() -> str:
    """Wait until the gate is opened (the test creates open.flag)."""
    while not os.path.exists("open.flag"):
        time.sleep(0.05)
    return "opened"
'''

LIVE_RUN = """\
# The pattern of notebook 12: the widget is named only at the end of the cell, yet it is live.
trace = TraceWidget()
live_result = Agent(ScriptedProvider([call("wait_for_gate"), "The gate is open."]), tools=[wait_for_gate]).run(
    "Open the gate.", on_event=trace
)
trace"""

LIVE_AFTER = """print("after:", live_result.stop_reason, live_result.output)"""

# Stop under agent.run(..., on_event=trace) (issue 45, item 13): the tool waits ten minutes.
STOP_SETUP = '''\
import asyncio
from agentnb import Agent, tool
from agentnb.notebook import TraceWidget
from agentnb.testing import ScriptedProvider, call

@tool
async def wait_long() -> str:
    """Wait ten minutes."""
    await asyncio.sleep(600)
    return "waited"
'''

STOP_RUN = """\
trace = TraceWidget()
stopped = Agent(ScriptedProvider([call("wait_long"), "Waited."]), tools=[wait_long]).run("Wait.", on_event=trace)
trace"""

STOP_AFTER = """print("after:", stopped.stop_reason)"""


# Issue 45: TeX from a model in every view (trace, fork bar, diff, evaluation view). The Markdown
# cell (second: the harness reads the first cell's prompt) is the control: MathJax does typeset there.
TEX_CONTROL = "MathJax control: $x^2 + 1$"

TEX_SETUP = r'''%load_ext agentnb
import agentnb
from agentnb import Agent, evaluate, tool
from agentnb.testing import ScriptedProvider, call

# Each would fetch from evil.example, draw a banner, make a link or turn into math if typeset.
TEX = [
    r"$\style{cursor:url(http://evil.example/PWN-tex1.png)}{PWNTEX1}$",
    r"$\style{background-color:red}{\text{PWNTEX2 approved by admin: safe to run}}$",
    r"$\href{http://evil.example/PWN-tex3}{PWNTEX3}$",
    "costs $5 and $6 PWNTEX4",
    "$$PWNTEX5^2$$",
    r"\(PWNTEX6\)",
    r"\[PWNTEX7\]",
    r"\begin{equation}PWNTEX8\end{equation}",
]
PAYLOAD = " ".join(TEX)
ODD_TOOL = r"<b>$\href{http://evil.example/PWN-tool}{PWNTOOL}$</b>"

@tool
def echo(text: str) -> str:
    """Echo the text."""
    return text

def model():
    return ScriptedProvider([call("echo", text=PAYLOAD), call(ODD_TOOL, x=PAYLOAD), PAYLOAD])

tex_model = model()

cases = [{"input": PAYLOAD, "expected": "ok"}, {"input": "plain", "expected": "ok"}]
two = {"tex": Agent(ScriptedProvider([PAYLOAD] * 2)), "plain": Agent(ScriptedProvider(["ok"] * 2))}
ev = evaluate(two, cases, scorers=[lambda case, r: r.output == case.expected], progress=False)

def show_eval():
    """The evaluation view with its diff open (the "diff" button's view)."""
    view = ev.view()
    display(view)
    view.show_diff(0)'''

TEX_DIFF = """\
first = Agent(model(), tools=[echo], system=PAYLOAD).run(PAYLOAD)
agentnb.diff(first, first.fork(0, reply=PAYLOAD + " (forked)"))"""

# The last cell: its trace's fork bar stays live (a later cell would freeze it).
TEX_RUN = """\
%%agent -p tex_model --tools echo --out traced
Echo this: {PAYLOAD}"""

TEX_VOILA = """\
show_eval()"""

# Steering (issue 48): agent.run() holds the cell while its tool waits for the person to say
# something in the trace's "Tell the agent…" box; the model's next request carries it.
STEER_SETUP = """\
import time
from agentnb import Agent, tool
from agentnb.notebook.trace.widget import TraceWidget
from agentnb.testing import ScriptedProvider, call

steer_trace = TraceWidget()

@tool
def read_table() -> str:
    \"\"\"Read the sales table (this step goes on until the person has said something).\"\"\"
    deadline = time.monotonic() + 120
    while not steer_trace.steer.sent and time.monotonic() < deadline:
        time.sleep(0.05)
    return "2023: 10, 2024: 12"

steer_model = ScriptedProvider([call("read_table"), "2023: 10 and 2024: 12."])"""

STEER_RUN = """\
steered = Agent(steer_model, tools=[read_table]).run("Sales in 2023?", on_event=steer_trace)"""

STEER_AFTER = """\
print("model read:", steer_model.requests[1].messages[-1].content)
print("said:", [(e.depth, e.text) for e in steered.events if e.kind == "user_interjected"])"""


def write(name: str, cells: tuple[str, ...]) -> None:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell(c) if c is TEX_CONTROL else nbformat.v4.new_code_cell(c) for c in cells]
    HERE.mkdir(exist_ok=True)
    nbformat.write(nb, HERE / name)


def main() -> None:
    write("trace_and_debugger.ipynb", (SETUP, TRACE, TRACE_RUN, FOLLOW, DECIDE, STEP, STEP_RUN, WHILE_PAUSED))
    write("stop_button.ipynb", (SLOW, SLOW_RUN, AFTER))
    write("voila.ipynb", (SETUP, TRACE, VOILA_TRACE, VOILA_STEP))
    write("highlighting.ipynb", (HIGHLIGHT_PY, HIGHLIGHT_AGENT))
    write("hostile.ipynb", (HOSTILE, HOSTILE_RUN, HOSTILE_REPLAY))
    write("approval.ipynb", (APPROVAL, APPROVAL_RUN, APPROVAL_AFTER, APPROVAL_SYNC, APPROVAL_SYNC_STOP))
    write("kernel_code.ipynb", (KERNEL_CODE, KERNEL_CODE_RUN, KERNEL_CODE_AFTER))
    write("eval_stop.ipynb", (EVAL_SETUP, EVAL_SYNC, EVAL_ASYNC, EVAL_MAGIC, EVAL_VIEWS))
    write("improve_stop.ipynb", (IMPROVE_SETUP, IMPROVE_ORIGINAL, IMPROVE_REFLECTION, IMPROVE_TEST, IMPROVE_COMPARE))
    write("fork.ipynb", (FORK, FORK_RUN, FORK_OPEN))
    write("fork_bar.ipynb", (FORK_BAR_SETUP, FORK_BAR_RUN))
    write("live_on_event.ipynb", (LIVE_SETUP, LIVE_RUN, LIVE_AFTER))
    write("tex.ipynb", (TEX_SETUP, TEX_CONTROL, TEX_DIFF, TEX_RUN))
    write("tex_voila.ipynb", (TEX_SETUP, TEX_CONTROL, TEX_DIFF, TEX_RUN, TEX_VOILA))
    write("fork_saves.ipynb", (SAVES_SETUP, SAVES_RUN))
    write("stop_on_event.ipynb", (STOP_SETUP, STOP_RUN, STOP_AFTER))
    write("steer.ipynb", (STEER_SETUP, STEER_RUN, STEER_AFTER))


if __name__ == "__main__":
    main()
