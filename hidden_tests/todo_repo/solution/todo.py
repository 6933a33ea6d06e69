"""A small todo list for the command line, kept in a JSON file.

Usage:
    python todo.py [--file PATH] add TEXT [--due YYYY-MM-DD]
    python todo.py [--file PATH] list [--all]
    python todo.py [--file PATH] overdue [--today YYYY-MM-DD]
    python todo.py [--file PATH] done ID
    python todo.py [--file PATH] remove ID
    python todo.py [--file PATH] edit ID TEXT
    python todo.py [--file PATH] clear

The file defaults to todo.json in the current directory; $TODO_FILE overrides that default.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict, dataclass
from datetime import date
from pathlib import Path

DEFAULT_FILE = "todo.json"
FORMAT_VERSION = 1


class TodoError(Exception):
    """A problem the user can fix: an unknown id, an unreadable file."""


@dataclass
class Item:
    id: int
    text: str
    done: bool = False
    due: str | None = None  # YYYY-MM-DD; ISO dates sort and compare correctly as strings

    def is_overdue(self, today: date) -> bool:
        return not self.done and self.due is not None and self.due < today.isoformat()


@dataclass
class TodoList:
    items: list[Item]
    next_id: int = 1

    def add(self, text: str, due: str | None = None) -> Item:
        text = text.strip()
        if not text:
            raise TodoError("the text of an item cannot be empty")
        item = Item(id=self.next_id, text=text, due=due)
        self.items.append(item)
        # Ids are never reused, so an id seen in an old listing never names a different item.
        self.next_id += 1
        return item

    def find(self, item_id: int) -> Item:
        for item in self.items:
            if item.id == item_id:
                return item
        raise TodoError(f"no item with id {item_id}")

    def mark_done(self, item_id: int) -> Item:
        item = self.find(item_id)
        item.done = True
        return item

    def remove(self, item_id: int) -> Item:
        item = self.find(item_id)
        self.items.remove(item)
        return item

    def rename(self, item_id: int, text: str) -> Item:
        text = text.strip()
        if not text:
            raise TodoError("the text of an item cannot be empty")
        item = self.find(item_id)
        item.text = text
        return item

    def clear_done(self) -> list[Item]:
        """Delete every item that is done; returns the deleted items."""
        cleared = [item for item in self.items if item.done]
        self.items = [item for item in self.items if not item.done]
        return cleared

    def visible(self, show_all: bool = False) -> list[Item]:
        return [item for item in self.items if show_all or not item.done]

    def overdue(self, today: date) -> list[Item]:
        """Open items due before `today`, earliest due date first, ties in id order."""
        late = [item for item in self.items if item.is_overdue(today)]
        return sorted(late, key=lambda item: (item.due or "", item.id))


def parse_date(text: str) -> date:
    """Parse YYYY-MM-DD strictly: a real calendar date in exactly that shape."""
    try:
        parsed = date.fromisoformat(text)
    except ValueError:
        parsed = None
    if parsed is None or parsed.isoformat() != text:
        raise TodoError(f"invalid date {text!r}: expected a real date written YYYY-MM-DD")
    return parsed


def read_item(raw: dict) -> Item:
    # Files written before due dates existed have no "due" key.
    due = raw.get("due")
    return Item(id=int(raw["id"]), text=str(raw["text"]), done=bool(raw.get("done", False)), due=due and str(due))


def load(path: Path) -> TodoList:
    """Read the list from `path`; a missing file is an empty list."""
    if not path.exists():
        return TodoList(items=[])
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        items = [read_item(raw) for raw in data["items"]]
    except (ValueError, KeyError, TypeError) as e:
        raise TodoError(f"{path} is not a todo file ({e})") from e
    next_id = int(data.get("next_id", max((item.id for item in items), default=0) + 1))
    return TodoList(items=items, next_id=next_id)


def save(todos: TodoList, path: Path) -> None:
    """Write the list to `path` through a temporary file, so a crash never leaves half a file."""
    data = {"version": FORMAT_VERSION, "next_id": todos.next_id, "items": [asdict(item) for item in todos.items]}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def format_item(item: Item) -> str:
    mark = "x" if item.done else " "
    line = f"{item.id:>3} [{mark}] {item.text}"
    return f"{line} (due {item.due})" if item.due else line


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="todo", description="A small todo list kept in a JSON file.")
    parser.add_argument("--file", help=f"the todo file (default: $TODO_FILE or {DEFAULT_FILE})")
    sub = parser.add_subparsers(dest="command", required=True)

    add = sub.add_parser("add", help="add an item")
    add.add_argument("text")
    add.add_argument("--due", help="due date, YYYY-MM-DD")

    show = sub.add_parser("list", help="list open items")
    show.add_argument("--all", action="store_true", help="include items already done")

    overdue = sub.add_parser("overdue", help="list open items whose due date has passed")
    overdue.add_argument("--today", help="the date to count from, YYYY-MM-DD (default: today)")

    done = sub.add_parser("done", help="mark an item as done")
    done.add_argument("id", type=int)

    remove = sub.add_parser("remove", help="delete an item")
    remove.add_argument("id", type=int)

    edit = sub.add_parser("edit", help="change the text of an item")
    edit.add_argument("id", type=int)
    edit.add_argument("text")

    sub.add_parser("clear", help="delete every item that is done")
    return parser


def todo_path(option: str | None) -> Path:
    return Path(option or os.environ.get("TODO_FILE") or DEFAULT_FILE)


def run(args: argparse.Namespace, todos: TodoList) -> bool:
    """Carry out one command; returns True when the list changed and must be saved."""
    if args.command == "add":
        due = parse_date(args.due).isoformat() if args.due is not None else None
        item = todos.add(args.text, due=due)
        print(f"added {item.id}: {item.text}")
        return True
    if args.command == "list":
        items = todos.visible(show_all=args.all)
        for item in items:
            print(format_item(item))
        if not items:
            print("nothing to do")
        return False
    if args.command == "overdue":
        today = parse_date(args.today) if args.today is not None else date.today()
        late = todos.overdue(today)
        for item in late:
            print(format_item(item))
        if not late:
            print("nothing overdue")
        return False
    if args.command == "done":
        item = todos.mark_done(args.id)
        print(f"done {item.id}: {item.text}")
        return True
    if args.command == "remove":
        item = todos.remove(args.id)
        print(f"removed {item.id}: {item.text}")
        return True
    if args.command == "edit":
        item = todos.rename(args.id, args.text)
        print(f"edited {item.id}: {item.text}")
        return True
    if args.command == "clear":
        cleared = todos.clear_done()
        print(f"cleared {len(cleared)} done item{'' if len(cleared) == 1 else 's'}")
        return bool(cleared)
    raise TodoError(f"unknown command {args.command!r}")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    path = todo_path(args.file)
    try:
        todos = load(path)
        if run(args, todos):
            save(todos, path)
    except TodoError as e:
        print(f"todo: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
