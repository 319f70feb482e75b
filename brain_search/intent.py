"""Query intent: where on the Z axis (exact ↔ broad) a query wants its results.

Cues are data (``CUES``): each is a bounded regex with a Z it pulls toward and a weight. Cues
are matched most specific first and a matched span is consumed, so "what do I think about"
counts once (not also as "think about"). The target Z is the weighted mean of the cues that
fired; with none, the query is balanced (spec 3.2). Every regex is linear-time: no nested
quantifiers, and the input is length-checked before any matching.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from brain_search.errors import InvalidInput
from brain_search.models import MAX_QUERY_CHARS, Intent


@dataclass(frozen=True)
class Cue:
    name: str
    pattern: re.Pattern[str]
    z: float
    weight: float
    strip: bool = True  # remove the matched words from the lexical query
    bound: str | None = None  # "ceil": an explicit request for exactness caps the target; "floor": for breadth
    # only introduces the topic ("notes on", "anything about"): ignored when another cue fired
    topic: bool = False
    # the question's form ("how much", "did we"): ignored beside an exact, opinion or exploration cue
    form: bool = False


@dataclass(frozen=True)
class QueryIntent:
    detected_intent: Intent
    target_z: float
    z_tolerance: float
    confidence: float
    cues: tuple[str, ...]
    lexical_query: str
    phrases: tuple[str, ...]


class IntentDetector(Protocol):
    def analyze(self, query: str, vector: np.ndarray | None = None) -> QueryIntent:
        """``vector``: the query's sentence embedding where the caller has it (a learned detector
        reads it; the regex detector ignores it)."""
        ...


def _c(
    name: str,
    regex: str,
    z: float,
    weight: float,
    strip: bool = True,
    case: bool = False,
    bound: str | None = None,
    topic: bool = False,
    form: bool = False,
) -> Cue:
    return Cue(name, re.compile(regex, 0 if case else re.IGNORECASE), z, weight, strip, bound, topic, form)


EXACT_CEILING = 0.15
BROAD_FLOOR = 0.82
# the most a cue may pull toward breadth and still count in a statement (the literal-words cues)
STATEMENT_CUE_MAX_Z = 0.1
# the pull of a quote that is an example of what to explore ("ideas similar to '...'")
EXAMPLE_QUOTE_WEIGHT = 0.75


_SUBJ = r"(?:i|we|you|he|she|they|[A-Z][a-z]+)"
_SAID = r"(?:said|mentioned|wrote|typed|noted|told|asked|used|called)"
_SAY = r"(?:say|said|mention|mentioned|write|wrote|type|typed|note|noted|tell|told|put|ask|asked|use|used|call|called)"
_CONV = r"(?:conversation|chat|discussion|thread|message|email|text|call|meeting|talk|exchange)s?"
_NAME = r"(?:[A-Z][^\W\d_]+)"

# Most specific first. z: where the cue pulls the target; weight: how strongly.
CUES: tuple[Cue, ...] = (
    # --- exact (Z → 0) ---------------------------------------------------------------------
    _c("word_for_word", r"\b(?:word[\s-]for[\s-]word|verbatim|letter for letter)\b", 0.05, 3.0, bound="ceil"),
    _c("exact_wording", r"\b(?:exact|precise) (?:words?|wording|phrase|phrasing|quote|sentence|line)\b", 0.05, 3.0),
    _c(
        "grep",
        r"\b(?:grep|ctrl[- ]?f|(?:search|look|scan|check) (?:\w+ ){0,3}for the (?:string|phrase|words?|term|text)|"
        r"the (?:string|literal text))\b",
        0.05,
        2.5,
    ),
    _c("find_conversation_where", rf"\bfind (?:the|that|a|my) {_CONV} (?:where|in which|when)\b", 0.2, 2.5),
    _c(
        "find_where_said",
        # not reported speech: "where did Anna say she parked?" asks where she parked
        rf"\b(?:find |show me |look up |pull up )?(?:exactly )?where (?:did |have |had )?{_SUBJ} (?:\w+ )?{_SAY}\b"
        r"(?! (?:she|he|they|it|we|you|i)\b)",
        0.1,
        2.5,
    ),
    _c("the_one_where_said", rf"\bthe (?:one|time|bit|part|line) (?:where|when) {_SUBJ} {_SAY}\b", 0.1, 2.5),
    _c(
        "did_i_ever_say",
        r"\b(?:did|have) (?:i|we|you) (?:ever )?(?:use|used|write|wrote|say|said|type|typed) (?:the )?(?:words?|phrase|term|line|sentence)\b",
        0.08,
        2.5,
        bound="ceil",
    ),
    _c(
        "containing_words",
        r"\b(?:containing|contains|contained|with the (?:words?|phrase|term)|mentions? of the (?:word|phrase|term)|the (?:word|phrase|term|wording))\b",
        0.1,
        2.0,
    ),
    _c(
        "literally",
        r"\b(?:literally (?:say|says|said|wrote|writes|reads)|(?:that|which) (?:says|reads|goes)|in (?:those|these) (?:exact )?words|the actual (?:words|text|message))\b",
        0.05,
        2.5,
    ),
    # past tense only: "when I said" is an episode of saying; "when I write about" is a habit
    _c("when_said", rf"\b(?:when|the time) (?:did {_SUBJ} {_SAY}|{_SUBJ} {_SAID})\b", 0.15, 2.0),
    # not a price: "the roofer's quote", "a quote for the deck", "which contractor quoted us"
    # ("quote me the line" is a request)
    _c(
        "quote",
        r"(?<!'s )(?<!’s )(?<!the )(?<!a )\b(?:(?:quote|quoting|quotation)\b(?! for\b)|quoted\b(?! (?:us|me|him|her|them|for)\b))",
        0.1,
        2.0,
    ),
    _c(
        "saved_quote",
        r"\b(?:quote|quotation|passage|excerpt|line) (?:i|we) (?:copied|saved|wrote down|noted|kept|highlighted|clipped)\b",
        0.08,
        2.5,
    ),
    _c("exactly", r"\bexact(?:ly)?\b", 0.1, 2.0, bound="ceil"),
    _c("specifically", r"\bspecific(?:ally)?\b", 0.15, 1.5),
    _c("the_message_that_said", rf"\b(?:the|that) {_CONV} (?:that|which) (?:said|says|mentioned)\b", 0.15, 2.0),
    # --- precise (Z ≈ 0.3) -----------------------------------------------------------------
    _c("that_conversation_where", rf"\b(?:the|that) {_CONV} (?:where|when|in which)\b", 0.3, 2.0),
    _c(
        "that_conversation_about",
        rf"\b(?:what was |what's )?(?:the|that) {_CONV} (?:about|with|on|regarding)\b",
        0.3,
        2.0,
    ),
    _c("what_did_name_think", rf"\b[Ww]hat did {_NAME} (?:think|say|feel|mean)\b", 0.3, 2.0, case=True),
    _c(
        "what_did_someone_say",
        # "what did the mechanic say was wrong", "what did the doctor tell me": one answer someone
        # gave; "what did the team say about X" asks for a topic (balanced)
        r"\bwhat did (?!(?:i|we|you)\b)(?:the |my |our |his |her |their )?[\w'’]+ (?:say|tell (?:me|us)|mention)\b"
        r"(?! (?:about|regarding|on|of|in|to)\b)",
        0.3,
        2.0,
    ),
    _c("who_said", rf"\bwho {_SAY}\b", 0.25, 1.5),
    _c(
        "factual_question",
        r"^\W*(?:how (?:much|many|long|far|old|often|big)|which|who(?:m)? (?:was|is|were|did|sent|reached|gave|told|made|took|brought|"
        r"found|won|paid|bought|sold|left|came|got|led|built|chose|picked|booked|hosted|organi[sz]ed|\w+ed)|"
        r"where (?:did|was|is|were|do(?! (?:i|we) stand))|when (?:did|was|is|were|will|does|do)|when's|what (?:time|day|date|dose|number|price|amount|"
        r"size|colou?r|kind|type|year|month|name|address|title|score)|what (?:was|is|were) the (?:name|number|date|"
        r"price|amount|address|title|\w+ (?:time|date|number|name)))\b",
        0.3,
        1.5,
        strip=False,
        form=True,
    ),
    _c(
        "fact_noun",
        r"\b(?:names?|date|address|phone number|number|price|cost|total|deadline|amount|expiry|check-in time|password|passcode|"
        r"(?:pin|gate|door|access|entry|alarm|lock|zip|postal|promo|discount|confirmation) code|wi-?fi|username|login|url|fee|"
        r"rent|salary|booking reference|tracking number|receipt|invoice|bill|measurement|test results|"
        # a reading taken ("my blood pressure reading from the checkup"), not the hobby ("reading goals")
        r"readings?(?= *(?:$|[?.!,]| (?:from|of|at|on|in|for|taken)\b)))\b",
        0.3,
        1.0,
        strip=False,
        form=True,
    ),
    _c(
        "did_we_question",
        r"^\W*(?:(?:did|have|has|was|were) (?:i|we|you|he|she|they)|did (?:the|my|our) \w+)\b",
        0.35,
        1.0,
        strip=False,
        form=True,
    ),
    # --- balanced (Z ≈ 0.5) ----------------------------------------------------------------
    _c(
        "what_did_we_discuss",
        r"\bwhat (?:did|have) (?:we|i|you|they) (?:discuss(?:ed)?|talk(?:ed)? about|say about|decide(?:d)?(?: on| about)?|agree(?:d)? on)\b",
        0.5,
        2.0,
    ),
    _c(
        "what_do_i_know",
        r"\b(?:what (?:do|did) (?:i|we) (?:know|have|keep)|what have (?:i|we) (?:got|saved|written|noted|stored|kept)|"
        r"what (?:do|did) (?:i|we) (?:remember|recall)|what(?:ever)? (?:i|we)(?:'ve| have)? (?:got|saved|written|noted|stored|kept|jotted)|"
        r"info(?:rmation)?|tell me|catch me up|summar(?:y|ize|ise)|recap|the latest|overview) (?:on|about|of|regarding)\b",
        0.5,
        2.0,
    ),
    _c(
        "status_of",
        r"\b(?:where (?:are|were|did) (?:we|i) (?:land|end up|stand)|status of|progress on|"
        r"what(?:'s| is| has)(?: been)? (?:going on|happening) with|"
        r"pros and cons|options (?:for|on)|what(?:'s| is) the (?:deal|story|situation) with)\b",
        0.5,
        1.5,
    ),
    _c(
        "conversations_about",
        r"\b(?:conversations|chats|discussions|talks|exchanges) (?:with (?:\w+ ){1,2})?(?:about|on|regarding)\b",
        0.5,
        2.0,
        topic=True,
    ),
    _c(
        "what_they_told_me",
        rf"\b(?:what|everything|all) {_SUBJ} (?:has |have )?(?:told|said to|shared with) (?:me|us) (?:about|on|regarding)\b",
        0.5,
        2.0,
    ),
    _c("what_came_up", r"\b(?:what|anything that) (?:came|comes|has come) (?:up|out of)\b", 0.5, 2.0),
    _c("anything_about", r"\b(?:anything|something|stuff) (?:about|on|regarding)\b", 0.5, 1.5, topic=True),
    _c("notes_on", r"\b(?:notes?|updates?|status) (?:on|about|regarding|for|from)\b", 0.5, 1.5, topic=True),
    _c("what_have_i_learned", r"\bwhat (?:have|did) (?:i|we) learn(?:ed|t)?\b", 0.55, 1.5),
    _c("discussed_about", r"\b(?:discuss(?:ed|ion|ions)?|talk(?:ed)?) about\b", 0.5, 1.0, topic=True),
    # --- conceptual (Z ≈ 0.6–0.7) ----------------------------------------------------------
    _c("what_do_i_think", r"\bwhat (?:do|did) (?:i|we) (?:think|believe|feel|value|want)\b", 0.62, 2.5),
    _c(
        "my_thinking_on",
        r"\b(?:my|our) (?:\w+ )?(?:thinking|thoughts|views?|opinions?|perspective|take|philosophy|beliefs?|stance|"
        r"approach|feelings?|reflections?|instincts?|position) (?:on|about|regarding|toward|towards|of|to)\b",
        0.65,
        2.5,
    ),
    _c(
        "how_do_i_feel",
        r"\bhow (?:do|did) (?:i|we) (?:really |actually |honestly )?(?:feel|think)(?: about)?\b",
        0.68,
        2.0,
    ),
    _c(
        "my_feelings",
        # "what am I most afraid of", "why am I anxious": a feeling of mine, not a fact
        r"\b(?:(?:am|are|was|were) (?:i|we)|(?:i|we)(?:'m| am|'re| are| was| were| feel| felt| get| got)) "
        r"(?:\w+ )?(?:afraid|scared|worried|anxious|nervous|excited|proud|ashamed|grateful|guilty|insecure|hopeful|"
        r"conflicted|torn|resentful|jealous|uneasy)\b",
        0.65,
        2.0,
    ),
    _c("why_do_i", r"\bwhy (?:do|did|am|was|have) (?:i|we)\b", 0.65, 2.0),
    # "inspire me with ...", "surprise me": a request for something to spark ideas; "what inspires me" is a value
    _c("inspire_me", r"^\W*(?:please |now |just )?(?:inspire|surprise) me\b", 0.88, 2.5),
    _c(
        "bothers_me",
        r"\b(?:bother|annoy|upset|frustrate|worry|scare|excite|inspire|energi[sz]e|drain|appeal to|matter to)s? (?:me|us)\b",
        0.65,
        2.0,
    ),
    _c(
        "do_i_like",
        r"\bdo (?:i|we) (?:\w+ )?(?:like|enjoy|want|love|hate|care|believe|value|regret|miss|trust|resent|envy|admire)\b",
        0.65,
        2.0,
    ),
    _c(
        "is_it_fair",
        r"\bis it (?:really |too )?(?:fair|unfair|right|wrong|worth|wise|smart|ok|okay|good|bad|selfish|rude|"
        r"unreasonable|reasonable|crazy|silly|healthy|normal)\b",
        0.68,
        2.0,
    ),
    _c(
        "values",
        r"\b(?:what (?:matters|motivates|drives|scares|worries|draws|attracts|pulls) (?:to )?(?:me|us)|my (?:values|priorities|relationship with)|"
        r"how (?:have|has) (?:i|my \w+) (?:changed|evolved|grown)|should (?:i|we)|how should (?:i|we) (?:approach|think|handle)|"
        r"am i (?:being )?(?:\w+ )?(?:good|bad|happy|right|wrong|ready|fair|unfair|selfish|reasonable|honest|harsh)|"
        r"am i (?:being )?(?:too|overly|really|actually|\w+ enough)\b|am i (?:any |much )?(?:more|less|better|worse|\w+ier)\b|"
        # "what do I look for in a cofounder", "what I care about": criteria and values
        r"what (?:do|did) (?:i|we) (?:look for|need|expect) (?:in|from)|what (?:i|we) (?:really |truly )?(?:care about|value)|"
        # "what does a good weekend look like for me", "what does success mean to me"
        r"what (?:does|do|would) (?:\w+ ){1,4}(?:look like|mean|feel like) (?:to|for) (?:me|us))\b",
        0.66,
        2.0,
    ),
    _c(
        "my_stance",
        r"\b(?:where (?:do|did) (?:i|we) stand|am i (?:for|against)|(?:for|in favou?r of) or against|"
        r"what (?:have|had|did) (?:i|we) conclude[d]?|(?:my|our) (?:\w+ )?(?:reasoning|rationale|reasons?|motivation) (?:behind|for)|"
        r"(?:my|our) gut|what (?:do|did) (?:i|we) make of|(?:right|wrong|good|bad|smart) (?:call|decision|move|choice|thing)|"
        r"(?:a )?(?:good|bad) idea|(?:was|is|were|be) (?:[\w'’]+ ){0,4}a (?:big |huge )?mistake|make[s]? sense to me|"
        r"worth it)\b",
        0.65,
        2.5,
    ),
    _c(
        "who_i_want_to_be",
        # "what kind of friend am I?": a question that ends on "am I" asks what I am like
        r"\b(?:(?:am|are) (?:i|we) trying to be|(?:do|did) (?:i|we) want to be|(?<=\w )(?:am i|are we)(?= *[?.!]*$)|"
        r"(?:my|our) (?:criteria|standards|dealbreakers|deal-breakers|non-negotiables|red lines) (?:for|on|in|when))\b",
        0.66,
        2.5,
    ),
    _c(
        "how_do_i_handle",
        r"\bhow (?:do|did|should|would) (?:i|we) (?:usually |typically |normally |tend to |generally )?"
        r"(?:approach|handle|deal with|cope with|navigate|decide|choose|prioriti[sz]e|make (?:\w+ )?(?:decisions|choices))\b",
        0.65,
        2.0,
    ),
    _c("thinking_about", r"\b(?:think|thought|thinking) (?:about|of|on)\b", 0.7, 1.5),
    _c("thoughts_on", r"\bthoughts (?:on|about|regarding)\b", 0.65, 1.5),
    # "lessons learned", not "swimming lessons"
    _c(
        "lessons",
        r"\b(?:lessons? (?:learned|learnt|from|i|we|did|that)|insights?|takeaways?|principles?|rules? of thumb|heuristics?|"
        r"mental models?)\b",
        0.75,
        1.0,
        strip=False,
    ),
    # --- broad (Z → 1) ---------------------------------------------------------------------
    _c(
        "explore_everything_related",
        r"\bexplore (?:everything|anything|all)(?: (?:related to|about|around|on|connected (?:to|with)))?\b",
        0.9,
        3.0,
    ),
    _c("ideas_similar_to", r"\bideas? (?:similar to|like)\b", 0.78, 3.0),
    _c("ideas_related", r"\bideas? (?:on|about|related to|around|for|connected to|regarding)\b", 0.85, 2.5),
    _c("explore", r"\b(?:explore|exploring|brainstorm|brainstorming|free[- ]associat\w*|riff on)\b", 0.9, 2.0),
    _c("everything_about", r"\beverything (?:about|on|related|around|regarding|connected)\b", 0.9, 2.0, bound="floor"),
    _c(
        "related_to",
        r"\b(?:(?:related|connected|relating|relates|linked|links|link|tied|ties) (?:to|with)|"
        r"related (?:notes|ideas|stuff|things|memories|material|entries|thoughts|reading)|"
        r"(?:anything|everything|stuff|things|notes|memories|ideas?) (?:\w+ )?associated (?:with|to))\b",
        0.85,
        1.5,
    ),
    _c(
        "similar_to",
        r"\b(?:similar to|reminiscent of|analogous to|along the lines of|in the (?:same )?(?:spirit|vein) of|"
        r"in the same (?:spirit|vein)|kindred|resonat(?:e|es|ing) with)\b",
        0.8,
        1.5,
    ),
    _c(
        "wander",
        r"\b(?:surprise me|touch(?:es|ing)? on|(?:even |at all )?remotely|vaguely|orbit(?:s|ing)?(?: around)?|"
        r"in the (?:neighbou?rhood|vicinity|orbit) of|connections? (?:across|among)|"
        r"(?:wander|browse|roam|meander|dig|rummage|tour)(?:ing)? (?:through|around|across)|take me through|"
        r"what else|anything else|(?:comes?|came) to mind|landscape|all the (?:stuff|things)|"
        r"everything (?:i|we)(?:'ve| have)? (?:\w+ )?(?:collected|saved|written|noted|got|gathered|kept))\b",
        0.88,
        2.5,
    ),
    _c("themes", r"\bthem(?:e|es|atic|atically)\b", 0.85, 1.5),
    _c("patterns", r"\bpatterns?\b", 0.85, 1.5),
    _c(
        "recurring",
        r"\b(?:recurring|common threads?|threads? (?:run|running|that run)|trends?|topics (?:that )?(?:come|keep coming) up|"
        r"keeps? (?:coming back|coming up|returning|recurring|popping up|resurfacing|showing up|turning up|cropping up)|"
        r"(?:i|we) keep (?:returning|coming back|going back) to|pull(?:ing)? (?:together )?threads?|through-?lines?|"
        r"(?:topics|subjects) (?:do |did |have )?(?:i|we) (?:\w+ )?(?:write|talk|think|journal|read) about)\b",
        0.85,
        2.0,
    ),
    _c(
        "generally",
        # bare "general" / "broad" only before a word for the scope itself ("general stuff", "a broad
        # sweep"): before any other noun they classify it ("a general stress marker", "a broad range")
        r"\b(?:generally|in general|(?:general|broad)(?= (?:stuff|things|notes|ideas|sense|view|overview|picture|look|sweep|"
        r"survey|scan|strokes|gist|themes|direction))|overall|broadly(?= *(?:[,.;:?!]|$|speaking|what|about|on|across|related))|big[- ]picture|wide[- ]ranging|far[- ]reaching|sweeping|at large|as a whole|random things|"
        r"wide net|across (?:all|everything)|loosely|wide[- ](?:angle|lens|view|sweep)|bird'?s[- ]eye|helicopter view)\b",
        0.85,
        1.5,
        bound="floor",
    ),
    _c(
        "adjacent",
        r"\b(?:tangential(?:ly)?|tangents?|adjacent|connect(?:ing)? the dots|links? between|cross[- ]cutting|bigger picture|all the ways|what connects|mind map|"
        r"overlaps? (?:between|with)|in common|intersections? (?:of|between)|common ground|associations? (?:with|around|to)|"
        r"anything (?:interesting|useful|relevant)|spark|whatever (?:i|we) (?:have|wrote))\b",
        0.88,
        2.0,
    ),
    _c("inspiration", r"\b(?:inspiration|analog(?:y|ies)|connections? between|might be useful)\b", 0.9, 1.0),
    _c(
        "tie_together",
        r"\b(?:tie[sd]? (?:together|in)|ties?(?= (?:[\w'’]+ ){1,5}together)|threads? (?:connecting|that (?:tie|connect|link))|connecting (?:my|the) (?:notes|ideas|dots)|clusters?|"
        r"open[- ]ended|what(?:'s| is) interesting)\b",
        0.88,
        2.0,
    ),
    _c("ideas", r"\bideas?\b", 0.85, 1.5, strip=False),
)

# a single quote opens only after a space or bracket and closes before a non-word: "3' ... 5'"
# (primes: 3' and 5' ends of a strand) is no quotation
_QUOTED = re.compile(
    r'"([^"]{1,300})"|“([^”]{1,300})”|‘([^’]{1,300})’|(?<![\w\'’])\'(?=\S)([^\n]{1,300}?)(?<=\S)\'(?![\w\'’])'
)
_MONEY = re.compile(
    r"[$€£¥]\s?\d[\d,.]*\s?(?:k|m|bn|million|billion)?\b|\b\d[\d,.]*\s?(?:%|percent\b|dollars\b|euros\b|usd\b)", re.I
)
# a numeric date is a valid day and month either way round (3/14, 14/3, 12/25/2025); a ratio or a
# split (60/40, 50/50) and "24/7" are not dates
_DATE = re.compile(
    r"\b(?:\d{4}-\d{2}-\d{2}|(?!24/7\b)(?:(?:0?[1-9]|1[0-2])/(?:0?[1-9]|[12]\d|3[01])|(?:0?[1-9]|[12]\d|3[01])/(?:0?[1-9]|1[0-2]))(?!\d)(?:/\d{2,4})?|(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.? \d{1,2}(?:st|nd|rd|th)?(?:,? \d{4})?|\d{1,2}(?:st|nd|rd|th)? (?:of )?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*(?:,? \d{4})?)\b",
    re.I,
)
_RELATIVE_DATE = re.compile(
    r"\b(?:(?:in|on|since|during|last|this|next|early|late) (?:january|february|march|april|may|june|july|august|"
    r"september|october|november|december|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"the \d{1,2}(?:st|nd|rd|th)|yesterday|last (?:week|night|month|year))\b",
    re.I,
)
# a value (12 weeks, 5-6 years, 100g), not a digit inside a name: IL-6, HIV-1, 4-PBA, F4/80, 5'-UTR
_NUMBER = re.compile(
    r"(?<![\w'’/])(?<![^\W\d_]-)\d+(?:[.,]\d+)?(?:st|nd|rd|th|am|pm|k|g|kg|mg|ml|km|cm|mm|h|hrs?|mins?|s|x)?"
    r"(?![\w'’/]|-[^\W\d_])"
)
_POSSESSIVE_NAME = re.compile(r"(?<![.?!]\s)(?<!^)\b([A-Z][^\W\d_]{1,30})['’]s\b")
_NAME_AFTER_PREP = re.compile(r"\b(?:with|from|by|for) ([A-Z][^\W\d_]{1,30})\b")
_ENTITY = re.compile(r"\b(?:[A-Z][^\W\d_]{1,30}|[A-Z]{2,6}\d{0,3}|[A-Z]\d{1,3})\b")
_WORD = re.compile(r"[\w$€£%'’-]+")

ABSTRACT_NOUNS = frozenset(
    [
        "fairness",
        "justice",
        "trust",
        "leadership",
        "culture",
        "growth",
        "creativity",
        "happiness",
        "meaning",
        "purpose",
        "motivation",
        "productivity",
        "success",
        "failure",
        "ambition",
        "identity",
        "values",
        "ethics",
        "freedom",
        "balance",
        "relationships",
        "partnership",
        "partnerships",
        "collaboration",
        "teamwork",
        "community",
        "innovation",
        "strategy",
        "vision",
        "philosophy",
        "learning",
        "wisdom",
        "resilience",
        "change",
        "love",
        "friendship",
        "honesty",
        "integrity",
        "equality",
        "power",
        "responsibility",
        "mindset",
        "habits",
        "wellbeing",
        "well-being",
        "courage",
        "fear",
        "risk",
        "ownership",
        "autonomy",
        "mentorship",
        "management",
        "entrepreneurship",
    ]
)
SPECIFIC_STARTERS = frozenset({"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"})

# Tiers on the Z axis (spec section 2): lower bound inclusive.
TIER_BOUNDS: tuple[tuple[float, Intent], ...] = (
    (0.2, Intent.exact),
    (0.4, Intent.precise),
    (0.6, Intent.balanced),
    (0.8, Intent.conceptual),
    (1.01, Intent.broad),
)
TIER_TARGETS: dict[Intent, float] = {
    Intent.exact: 0.1,
    Intent.precise: 0.3,
    Intent.balanced: 0.5,
    Intent.conceptual: 0.7,
    Intent.broad: 0.9,
}


def z_tolerance_for(confidence: float) -> float:
    """The Z tolerance (0–1) that goes with a detection's confidence (0–1)."""
    return 0.2 if confidence > 0.7 else 0.35 if confidence > 0.4 else 0.3


def intent_for_z(z: float) -> Intent:
    for bound, intent in TIER_BOUNDS:
        if z < bound:
            return intent
    return Intent.broad


def named_entities(text: str) -> list[str]:
    """Capitalised words that are not sentence-initial, and acronyms (CTO, Q2, PR)."""
    out = []
    for m in _ENTITY.finditer(text):
        before = text[: m.start()].rstrip()
        if m.group(0) == "I" or not before or before[-1] in '.?!:;"“(':
            continue
        out.append(m.group(0))
    return out


def extract_phrases(query: str) -> list[str]:
    """Quoted phrases in straight, curly or single quotes (apostrophes inside words excluded)."""
    out = []
    for m in _QUOTED.finditer(query):
        phrase = next(g for g in m.groups() if g is not None).strip()
        if phrase:
            out.append(phrase)
    return out


_STATEMENT_OPENERS = frozenset(
    """find show get give list look search pull tell remind recall what what's whats which who whom whose when
    where why how did do does is are was were can could would will should shall have has had any anything
    everything something explore help please let let's brainstorm summarize summarise recap compare
    quote grep copy repeat verbatim exact exactly literally""".split()
)
# Imperative request verbs: "Explain my rationale for ...", "Map out everything that touches on
# trust.", "Recite the comment ..." end with a full stop but ask for something. Many of them are
# nouns too ("Total revenue grew.", "Group meetings moved to Tuesday."), so the verb counts only
# before a word that an imperative takes (``_IMPERATIVE_NEXT``: "me", "my", "out", "the", ...), and
# only in lower or title case (a sentence opening with "MAP" or "CHOP" names a gene).
_REQUEST_VERBS = frozenset(
    """explain describe recite read reread surprise map trace walk outline connect collect gather dig bring
    fetch locate identify sketch draw reflect contrast track highlight point surface resurface suggest
    check name count scan skim review revisit replay play display print open jump take send share dredge
    unearth retrieve lookup cite paraphrase reconstruct spot flag group cluster organize organise sort rank
    link relate match assemble compile synthesize synthesise distill distil break go run pick select grab
    dump extract isolate piece tie weave lay spell catch fill refresh jog zoom narrow broaden widen
    tally total sum chart plot visualize visualise string""".split()
)
_IMPERATIVE_NEXT = frozenset(
    """me us my our your his her their its the a an this that these those every each all any anything
    everything something some what how why where when which who whatever out up back through down over
    together across around""".split()
)
# "I need the exact wording of ...", "Looking for ...": a request phrased as a sentence
_REQUEST_LEAD = re.compile(
    r"^\W*(?:i(?:'d| would)? (?:need|want|like)|i(?:'m| am) (?:looking|trying|searching)|(?:looking|searching) for|"
    r"need|want)\b",
    re.IGNORECASE,
)
_CLOSERS = "\"'”’)]»"
# a sentence that ends in a request for what it described: 'The line that starts "Most people ..."
# - find it.', '... in a standup; locate that line.' (a verb before "it", "that", "me", ...; "The
# plan is simple: get funding." stays a statement)
_REQUEST_TAIL = re.compile(
    r"(?:[;:—–]|\s-)\s*(?:please\s+|can you\s+|could you\s+)?(?:find|locate|show|get|pull|give|tell|remind|search|look|"
    r"dig|bring|fetch|quote|recite|read)\s+(?:it|that|this|them|those|these|me|where)\b[^;:—–]{0,40}$",
    re.IGNORECASE,
)
# words that report speech or writing just before a quote: 'Tom said "ship it"', 'the line "..."',
# 'Dad: "proud of you"'; a quote after anything else in a statement is emphasis or a coined term
# ('cells generate "Van Gogh" bundles', 'we call it the "friday freeze"')
_REPORTED_SPEECH = re.compile(
    r"(?:\b(?:say|says|said|saying|write|writes|wrote|written|type|typed|text|texted|tell|tells|told|reply|replied|"
    r"answer|answered|ask|asked|mention|mentioned|message|messaged|email|emailed|post|posted|tweet|tweeted|"
    r"shout|shouted|yell|yelled|whisper|whispered|goes|went|read|reads|word|words|phrase|term|line|sentence|"
    r"quote|quoted|like)\b(?:\s+[\w'’]+){0,2}|:)[\s,]*$",
    re.IGNORECASE,
)


# cues that ask for something only in a request: "the note containing ...", "anything related to ...",
# "specifically the email ..." ask for words or breadth; in a statement they are ordinary words of
# its content ("cells containing the mutation divide", "X is linked to Y", "tissue-specific damage")
_REQUEST_ONLY = frozenset({"containing_words", "related_to", "similar_to", "specifically"})


def is_statement(query: str) -> bool:
    """A declarative sentence: ends with one full stop (not "..." or "?"; a closing quote or
    bracket may follow it) and does not open with a question word, an auxiliary, a request
    ("Find ...", "Show me ...", "I need ...") or an imperative verb ("Explain ...", "Map out ...")."""
    text = query.strip().rstrip(_CLOSERS)
    if not text.endswith(".") or text.endswith("..") or _REQUEST_LEAD.match(text):
        return False
    if _REQUEST_TAIL.search(text):
        return False
    words = text.split(maxsplit=2)
    token = words[0].strip("\"'“‘(")
    first = token.lower()
    following = words[1].lower().strip("\"'“‘(,") if len(words) > 1 else ""
    if first in _REQUEST_VERBS and following in _IMPERATIVE_NEXT and not token.isupper():
        return False
    return first not in _STATEMENT_OPENERS


def is_bare_quote(query: str) -> bool:
    """The query is nothing but quoted words (``"10% each for"``, ``“a CTO who still codes”.``):
    there is nothing else it could ask for than those words."""
    return bool(_QUOTED.search(query)) and not _WORD.search(_QUOTED.sub(" ", query))


# identifier strings: a hashtag, a snake_case name or key prefix, a ticket or invoice number
# (INC-4471, INV-2023-0417), a tracking code (1Z999AA10123456784)
_CODE = re.compile(
    r"(?<![\w#])#[^\W\d_][\w-]{0,60}|\b[A-Za-z][A-Za-z0-9]{0,30}_[A-Za-z0-9_]{0,60}|\b[A-Z]{2,8}-\d{3,12}(?:-\d{1,12})?\b"
)
_TRACKING = re.compile(r"\b[A-Za-z0-9]{8,40}\b")
# the words a search for a string may hold beside it: "search my notes for #lowstock", "INC-4471
# mentions", "Find the message with ERR_CERT_DATE_INVALID in it"
_CODE_SEARCH_WORDS = frozenset(
    """find search grep look lookup locate show get pull for up my me the a an in on of at all every any
    note notes message messages email emails chat chats doc docs file files log logs mention mentions
    mentioning mentioned with containing contains contain string where it that this tagged tag tags
    and or i wrote used hit hits occurrence occurrences entry entries""".split()
)


def code_strings(query: str) -> list[str]:
    """The identifier strings in ``query`` (``_CODE``; a tracking code: 8+ letters and digits with
    at least three digits and two letters)."""
    out = [m.group() for m in _CODE.finditer(query)]
    for m in _TRACKING.finditer(query):
        t = m.group()
        if sum(c.isdigit() for c in t) >= 3 and sum(c.isalpha() for c in t) >= 2 and t not in out:
            out.append(t)
    return out


def is_bare_code(query: str) -> bool:
    """The query asks for identifier strings and nothing else (``code_strings``, beside at most
    the words of a search: ``_CODE_SEARCH_WORDS``): ``ERR_CONN_RESET``, ``#reno-week3``, ``INC-4471
    mentions``. A string has no meaning to broaden: the user wants the memories holding it."""
    return not is_statement(query) and _only_codes(query)


def _only_codes(query: str) -> bool:
    """``is_bare_code`` without the statement check (for a caller that has made it)."""
    codes = code_strings(query)
    if not codes:
        return False
    rest = query
    for c in codes:
        rest = rest.replace(c, " ")
    return all(w.lower().strip("'’") in _CODE_SEARCH_WORDS for w in _WORD.findall(rest))


def quotes_as_emphasis(query: str) -> bool:
    """In a statement, quotes mark emphasis or a coined term, not words to find: true when the
    query is a statement with words outside its quotes and no quote reports speech or writing.
    ``Tom said "ship it" on Friday.`` and a bare ``"ship it."`` stay requests for the words."""
    if not is_statement(query):
        return False
    spans = [m.span() for m in _QUOTED.finditer(query)]
    if not spans:
        return False
    outside = _QUOTED.sub(" ", query)
    if len(_WORD.findall(outside)) < 2:
        return False
    # the verb sits within three words of the quote: a bounded look-back keeps this linear
    return not any(_REPORTED_SPEECH.search(query[max(0, s - 80) : s]) for s, _ in spans)


def _overlaps(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    return any(span[0] < e and s < span[1] for s, e in taken)


def analyze(query: str, max_chars: int = MAX_QUERY_CHARS) -> QueryIntent:
    """Detect the Z target of ``query``. ``target_z``, ``z_tolerance`` and ``confidence`` are 0–1."""
    if len(query) > max_chars:
        raise InvalidInput("query", f"longer than {max_chars} characters")
    if not query.strip():
        raise InvalidInput("query", "empty")
    fired: list[tuple[str, float, float]] = []
    taken: list[tuple[int, int]] = []
    strip_spans: list[tuple[int, int]] = []
    bounds: set[str] = set()
    topic_cues: set[str] = set()
    form_cues: set[str] = set()

    phrases = extract_phrases(query)
    for m in _QUOTED.finditer(query):
        taken.append(m.span())
    statement = is_statement(query)
    # emphasis quotes still count as phrases (a memory holding them ranks higher) but pull no Z
    if phrases and not quotes_as_emphasis(query):
        fired.append(("quoted_phrase", 0.05, 3.0))
    if not statement and _only_codes(query):  # is_bare_code, with the statement test made above
        fired.append(("code_string", 0.05, 3.0))

    for cue in CUES:
        for m in cue.pattern.finditer(query):
            if _overlaps(m.span(), taken):
                continue
            taken.append(m.span())
            if cue.strip:
                strip_spans.append(m.span())
            fired.append((cue.name, cue.z, cue.weight))
            if cue.topic:
                topic_cues.add(cue.name)
            if cue.form:
                form_cues.add(cue.name)
            if cue.bound:
                bounds.add(cue.bound)
            break  # one firing per cue

    if any(n not in topic_cues for n, _, _ in fired):
        fired = [f for f in fired if f[0] not in topic_cues]
    # a question's form ("how much", "which", "did we") yields to an explicit request for the
    # literal words or for an opinion / exploration
    if any(z >= 0.6 or z <= 0.2 for n, z, _ in fired if n not in form_cues):
        fired = [f for f in fired if f[0] not in form_cues]
    # A plain statement ("Sarah moved to Lisbon in 2019.") asks for nothing: its names, numbers and
    # nouns are what it is about, and so are words that would be cues in a request ("a pattern of
    # late invoices", "thinks it was a good idea", "the number of cells rises"). Only an explicit
    # request for the literal words counts: a quote of what was said, "word for word", "exactly".
    if statement:
        fired = [f for f in fired if f[1] <= STATEMENT_CUE_MAX_Z and f[0] not in _REQUEST_ONLY]
    outside = "".join(ch if not _overlaps((i, i + 1), taken) else " " for i, ch in enumerate(query))
    # An opinion / theme cue makes specifics (names, numbers) the topic, not a request for exactness.
    soft = any(z >= 0.6 for _, z, _ in fired)
    if fired and fired[0][0] == "quoted_phrase" and any(z >= 0.75 for n, z, _ in fired if n != "quoted_phrase"):
        fired[0] = ("quoted_phrase", 0.05, EXAMPLE_QUOTE_WEIGHT)  # "ideas similar to '...'": the quote is an example
    spec_w = 0.3 if soft else 1.0
    specific = statement
    if not statement and _MONEY.search(outside):
        fired.append(("money_or_percent", 0.2, 1.0 * spec_w))
        specific = True
    if not statement and (_DATE.search(outside) or _RELATIVE_DATE.search(outside)):
        fired.append(("date", 0.25, 1.0 * spec_w))
        specific = True
    elif _NUMBER.search(outside) and not specific:
        fired.append(("number", 0.25, 0.7 * spec_w))
        specific = True
    if not statement and (_POSSESSIVE_NAME.search(outside) or _NAME_AFTER_PREP.search(outside)):
        fired.append(("proper_noun_with_modifier", 0.3, 1.0 * spec_w))
        specific = True
    elif not statement and named_entities(outside):
        fired.append(("named_entity", 0.3, 1.0 * spec_w))
        specific = True
    words = [w.lower().strip("'’") for w in _WORD.findall(outside)]
    # in a factual question ("when did we last change the filter") an abstract noun is just its topic
    factual = any(n in form_cues for n, _, _ in fired)
    if not specific and not phrases and not factual and any(w in ABSTRACT_NOUNS for w in words):
        fired.append(("abstract_noun", 0.75, 0.75))

    lexical_query = _strip_spans(query, strip_spans)
    if not fired:
        return QueryIntent(Intent.balanced, 0.5, 0.3, 0.5, (), lexical_query, tuple(phrases))
    total = sum(w for _, _, w in fired)
    target = sum(z * w for _, z, w in fired) / total
    if "floor" in bounds and "ceil" not in bounds:
        target = max(target, BROAD_FLOOR)
    elif "ceil" in bounds and "floor" not in bounds:
        target = min(target, EXACT_CEILING)
    spread = (sum(w * (z - target) ** 2 for _, z, w in fired) / total) ** 0.5
    confidence = max(0.05, min(1.0, total / 3.0) * (1.0 - min(spread, 0.5)))
    tolerance = z_tolerance_for(confidence)
    return QueryIntent(
        detected_intent=intent_for_z(target),
        target_z=round(target, 4),
        z_tolerance=tolerance,
        confidence=round(confidence, 4),
        cues=tuple(n for n, _, _ in fired),
        lexical_query=lexical_query,
        phrases=tuple(phrases),
    )


_LEAD_FILLER = re.compile(
    r"^(?:\s*(?:find|show|show me|tell me|get|give me|search|search for|look for|look up|pull up|recall|remind me|"
    r"what|what's|where|can you|could you|please|the|that|a|an|all|my|me|about|of|on|for|to|in|and|or|was|is|did|do|"
    # the request's own verb of saying ("what exactly did I say about ..."): not words to find
    r"(?:i|we|you) (?:say|said|mention|mentioned|write|wrote|tell|told|type|typed|note|noted|put))\b[\s,.:;?!]*)+",
    re.I,
)


def _strip_spans(query: str, spans: list[tuple[int, int]]) -> str:
    """The query minus cue words (quoted phrases keep their words), minus leading filler."""
    out = []
    last = 0
    for s, e in sorted(spans):
        out.append(query[last:s])
        last = max(last, e)
    out.append(query[last:])
    text = " ".join("".join(out).split())
    text = _QUOTED.sub(lambda m: " " + next(g for g in m.groups() if g is not None) + " ", text)
    stripped = _LEAD_FILLER.sub("", text).strip(" \t?.!,;:")
    return " ".join(stripped.split()) or " ".join(text.split()).strip(" ?.!")


class RegexIntentDetector:
    """The default detector (the `IntentDetector` protocol's implementation)."""

    def __init__(self, max_chars: int = MAX_QUERY_CHARS) -> None:
        self.max_chars = max_chars

    def analyze(self, query: str, vector: np.ndarray | None = None) -> QueryIntent:
        return analyze(query, self.max_chars)
