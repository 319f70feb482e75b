"""The intent cues (data): each a bounded regex with the Z it pulls toward and a weight, most
specific first (``CUES``), and the constants the detector combines them with."""

from __future__ import annotations

import re

from brain_search.retrieval.intent.types import Cue


def _c(
    name: str,
    regex: str,
    z: float,
    weight: float,
    *,
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
