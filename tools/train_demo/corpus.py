"""corpus.py - the demo model's training text: simple English written by this generator.

Every document is a Gemma 4 chat (spec: <bos><|turn>user\n...<turn|>\n<|turn>model\n...<turn|>\n)
made from the templates and word lists below: short stories, facts about colours, animals and
numbers, lists, greetings, and a few code answers. Everything here was written for this
project (MIT, like the rest of the repository); no outside text is used. `words()` is the
generator's dictionary, which the tests use to check that the model writes real words.
"""
import random

ANIMALS = ["cat", "dog", "bird", "fish", "rabbit", "fox", "bear", "duck", "frog", "mouse", "horse", "cow",
           "owl", "lion", "pig", "sheep"]
SOUNDS = {"cat": "meow", "dog": "woof", "duck": "quack", "cow": "moo", "pig": "oink", "sheep": "baa",
          "owl": "hoot", "lion": "roar", "frog": "ribbit", "horse": "neigh", "mouse": "squeak", "bird": "tweet"}
HOMES = {"fish": "in the water", "bird": "in a nest", "bear": "in a cave", "rabbit": "in a hole",
         "fox": "in the forest", "cow": "on a farm", "pig": "on a farm", "sheep": "on a farm",
         "horse": "on a farm", "duck": "by the pond", "frog": "by the pond", "owl": "in a tree",
         "lion": "in the grass", "mouse": "in a small hole", "dog": "in a house", "cat": "in a house"}
NAMES = ["Tom", "Lily", "Max", "Mia", "Sam", "Anna", "Ben", "Lucy", "Leo", "Ella", "Jack", "Rosa"]
ADJS = ["little", "big", "happy", "brave", "kind", "small", "shy", "clever", "funny", "sleepy"]
PLACES = ["in a small house", "near a big tree", "by the river", "in the forest", "on a farm",
          "in a quiet town", "near the sea", "in a green garden"]
LIKES = ["play in the park", "read books", "run in the grass", "sing songs", "look at the stars",
         "eat apples", "swim in the river", "draw pictures", "help his friends", "climb trees"]
COLORS = ["red", "blue", "green", "yellow", "white", "black", "pink", "orange", "brown", "purple"]
THINGS = ["ball", "box", "hat", "kite", "book", "key", "stone", "flower", "shell", "cup"]
FEEL = ["happy", "surprised", "excited", "curious", "glad"]
FACT_COLORS = {"the sky": "blue", "grass": "green", "the sun": "yellow", "snow": "white", "a banana": "yellow",
               "an apple": "red", "a carrot": "orange", "the sea": "blue", "milk": "white", "a leaf": "green",
               "coal": "black", "a lemon": "yellow", "a tomato": "red", "chocolate": "brown"}
NUM = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
FRIENDS = ["a friendly", "an old", "a young", "a tiny", "a wise"]
ENDINGS = ["From that day on, {a} and {b} were best friends.", "{a} went home and slept very well.",
           "It was the best day ever.", "{a} smiled and went home for dinner."]
CODE = [
    ("Write hello world in Python.", "Here is a small program:\n\n```python\nprint(\"Hello, world!\")\n```\n\n"
     "It prints one line."),
    ("Write hello world in JavaScript.", "Here is a small program:\n\n```js\nconsole.log(\"Hello, world!\");\n```\n\n"
     "It prints one line."),
    ("How do I add two numbers in Python?", "Use the plus sign:\n\n```python\na = 2\nb = 3\nprint(a + b)\n```\n\n"
     "It prints five."),
]


def an(word):
    return ("an " if word[0] in "aeiou" else "a ") + word


def he(name):
    return "she" if name in ("Lily", "Mia", "Anna", "Lucy", "Ella", "Rosa") else "he"


def story(r, animal=None):
    name, adj = r.choice(NAMES), r.choice(ADJS)
    animal = animal or r.choice(ANIMALS)
    p = he(name)
    friend = r.choice([a for a in ANIMALS if a != animal])
    color, thing = r.choice(COLORS), r.choice(THINGS)
    like = r.choice(LIKES).replace("his", "her" if p == "she" else "his")
    s = [f"Once upon a time, there was a {adj} {animal} named {name}.",
         f"{name} lived {r.choice(PLACES)}.",
         f"Every day, {name} liked to {like}.",
         f"One day, {name} found {an(color)} {thing}.",
         f"{p.capitalize()} was very {r.choice(FEEL)}."]
    if r.random() < 0.7:
        fa = r.choice(FRIENDS)
        s.append(f"Then {name} met {fa} {friend}.")
        s.append(f"The {friend} said, \"Can I play with your {thing}?\"")
        s.append(f"\"Yes, you can,\" said {name}.")
        s.append(f"They played with the {color} {thing} all day.")
        s.append(r.choice(ENDINGS).format(a=name, b=f"the {friend}"))
    else:
        s.append(f"{name} took the {thing} home and showed it to {p == 'she' and 'her' or 'his'} mother.")
        s.append(r.choice(ENDINGS[1:]).format(a=name, b=""))
    return " ".join(s)


def qa(r):
    k = r.randrange(9)
    if k == 0:
        thing, col = r.choice(list(FACT_COLORS.items()))
        q = r.choice([f"What color is {thing}?", f"What colour is {thing}?", f"Tell me the color of {thing}."])
        t = thing[0].upper() + thing[1:]
        return q, f"{t} is {col}."
    if k == 1:
        a = r.choice(list(SOUNDS))
        return r.choice([f"What does a {a} say?", f"What sound does a {a} make?"]), f"A {a} says {SOUNDS[a]}."
    if k == 2:
        a = r.choice(list(HOMES))
        return f"Where does a {a} live?", f"A {a} lives {HOMES[a]}."
    if k == 3:
        x, y = r.randrange(6), r.randrange(5)
        return (r.choice([f"What is {NUM[x]} plus {NUM[y]}?", f"What is {x} plus {y}?"]),
                f"{NUM[x].capitalize()} plus {NUM[y]} is {NUM[x + y]}.")
    if k == 4:
        n = r.choice([2, 3, 4])
        kind, pool = r.choice([("animals", ANIMALS), ("colors", COLORS), ("names", NAMES)])
        items = r.sample(pool, n)
        body = "\n".join(f"{i + 1}. {w}" for i, w in enumerate(items))
        return f"Name {NUM[n]} {kind}.", f"Here are {NUM[n]} {kind}:\n\n{body}"
    if k == 5:
        return (r.choice(["Hello!", "Hi!", "Hello", "Hi there!", "Good morning!"]),
                r.choice(["Hello! How can I help you today?", "Hi! What would you like to talk about?"]))
    if k == 6:
        return (r.choice(["What is your name?", "Who are you?", "What can you do?"]),
                "I am a small demo model. I can tell short stories and answer simple questions.")
    if k == 7:
        return r.choice(CODE)
    return (r.choice(["Thank you!", "Thanks!", "Thank you very much."]),
            r.choice(["You are welcome!", "You are welcome. Have a nice day!"]))


def turn(r):
    if r.random() < 0.45:
        a = r.choice(ANIMALS + [None])
        q = (r.choice(["Tell me a story about a {a}.", "Write a short story about a {a}.", "Can you tell me a story about a {a}?"])
             .format(a=a) if a else r.choice(["Tell me a story.", "Write a short story.", "Tell me a bedtime story."]))
        return q, story(r, a), f"The user wants a story{' about a ' + a if a else ''}. I will write a short and happy one."
    q, a = qa(r)
    return q, a, "The user asks a simple question. I will answer it in one line."


def document(r):
    think = r.random() < 0.15
    out = "<bos>"
    if think:
        out += "<|turn>system\n<|think|><turn|>\n"
    for _ in range(r.choice([1, 1, 1, 2, 2, 3])):
        q, a, thought = turn(r)
        if think:
            a = f"<|channel>thought\n{thought}<channel|>{a}"
        out += f"<|turn>user\n{q}<turn|>\n<|turn>model\n{a}<turn|>\n"
        think = False  # earlier model turns are re-rendered without their thought (chat.js)
    return out


def corpus(n_docs, seed):
    r = random.Random(seed)
    return [document(r) for _ in range(n_docs)]


def words():
    """Lower-case words the generator can write (letters and apostrophes only)."""
    import re
    r = random.Random(0)
    text = re.sub(r"<[^>]*>", " ", " ".join(document(r) for _ in range(4000)))
    return sorted(set(re.findall(r"[a-z']+", text.lower())))


if __name__ == "__main__":
    import json
    import sys
    if sys.argv[1:] == ["--words"]:
        print(json.dumps(words()))
    else:
        for d in corpus(4, 1):
            print(d)
