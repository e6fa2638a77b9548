"""lichess bot bridge: the account's events and each game's stream in, `Player` decisions out.

The network side is `klent.protocols.lichess_client` (one method per Bot API endpoint, the token,
rate limits and retries); this module is the bot's conduct on top of it:

* every stream is reopened with exponential backoff when lichess drops it, and every game
  resumes from the full state lichess sends on reconnection (``gameFull``).  A move is sent
  only when the move list says it is our turn and we have not already answered that very
  list, so a reconnection never makes a move twice or loses one;
* each game runs in its own thread with its own `Player` (the position and search tree are
  per game); the number of games is bounded by ``max_games``, extra challenges are declined
  with ``later``;
* on shutdown the games in progress are finished or resigned, as configured.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import klent.engine.games
from klent.engine.games.base import Setup, State
from klent.engine.player import Player, PlayOptions, ResignTracker, clock_budget
from klent.protocols.lichess_client import LichessClient, LichessError, StreamDropped
from klent.protocols.lichess_config import BotConfig, ChallengePolicy

log = logging.getLogger("klent.lichess")

FINISHED = {"aborted", "mate", "resign", "stalemate", "timeout", "draw", "outoftime", "cheat",
            "noStart", "unknownFinish", "variantEnd"}
STARTPOS = "startpos"


def decline_reason(
    challenge: dict[str, Any], policy: ChallengePolicy, busy: bool
) -> str | None:
    """lichess's decline reason for ``challenge`` under ``policy``, or None to accept it."""
    challenger = challenge.get("challenger") or {}
    user = str(challenger.get("id", "")).lower()
    if user in policy.block_list or (policy.allow_list and user not in policy.allow_list):
        return "generic"
    is_bot = challenger.get("title") == "BOT"
    if is_bot and not policy.accept_bots:
        return "noBot"
    if not is_bot and not policy.accept_humans:
        return "onlyBot"
    variant = (challenge.get("variant") or {}).get("key", "standard")
    if variant not in policy.variants:
        return "standard" if variant == "standard" else "variant"
    clock = challenge.get("timeControl") or {}
    if clock.get("type") != "clock":
        return "timeControl"
    base, increment = float(clock.get("limit", 0)), float(clock.get("increment", 0))
    if base < policy.min_base or increment < policy.min_increment:
        return "tooFast"
    if base > policy.max_base or increment > policy.max_increment:
        return "tooSlow"
    rated = bool(challenge.get("rated"))
    if rated and not policy.accept_rated:
        return "casual"
    if not rated and not policy.accept_casual:
        return "rated"
    if busy:
        return "later"
    return None


class GameRunner:
    """Plays one game: follows its stream, answers offers, moves on our turn."""

    def __init__(self, bot: Bot, game_id: str) -> None:
        self.bot = bot
        self.game_id = game_id
        self.config = bot.config
        self.thread = threading.Thread(target=self._run, name=f"lichess-game-{game_id}", daemon=True)
        self.finished = threading.Event()
        self._player: Player | None = None
        self._initial: State | None = None
        self._initial_fen: str | None = None
        self._white = True
        self._moves: list[str] = []
        self._answered: int | None = None  # length of the move list we last answered
        self._offers_answered: set[tuple[str, int]] = set()
        self._resign = ResignTracker(self.config.game.resign_value, self.config.game.resign_moves)
        self._greeted = False
        self._last_change = time.monotonic()

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        delay = self.config.network.backoff_base
        try:
            while not self.finished.is_set():
                try:
                    with self.bot.client.game_stream(self.game_id) as events:
                        for event in events:
                            delay = self.config.network.backoff_base
                            if event is not None:
                                self._handle(event)
                            if self.finished.is_set() or self._check_idle():
                                break
                    if not self.finished.is_set():
                        raise StreamDropped("the game stream ended before the game did")
                except StreamDropped as error:
                    log.warning("game %s: %s; reconnecting in %.1f s", self.game_id, error, delay)
                    if self.bot.resigning.is_set():
                        self._resign_for_shutdown()
                    time.sleep(delay)
                    delay = min(2 * delay, self.config.network.backoff_max)
        except LichessError as error:
            log.error("game %s: %s", self.game_id, error)
        except Exception as error:  # a game thread must not die silently
            reason = self.bot.client.redact(str(error))
            log.error("game %s: unexpected %s: %s", self.game_id, type(error).__name__, reason)
        finally:
            self.finished.set()
            self.bot.game_ended(self.game_id)

    def _handle(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "gameFull":
            self._game_full(event)
        elif kind == "gameState":
            self._game_state(event)
        elif kind == "chatLine":
            room, user, text = event.get("room"), event.get("username"), event.get("text")
            log.info("game %s chat [%s] %s: %s", self.game_id, room, user, text)
        elif kind == "opponentGone":
            self._opponent_gone(event)

    def _game_full(self, event: dict[str, Any]) -> None:
        self._white = str((event.get("white") or {}).get("id", "")).lower() == self.bot.user_id
        fen = event.get("initialFen") or STARTPOS
        if self._initial is None or fen != self._initial_fen:
            game = self.bot.game
            self._initial = game.start_state(Setup(fen=None if fen == STARTPOS else fen))
            self._initial_fen = fen
            self._moves = []
            self._player = self.bot.make_player()
        if not self._greeted:
            self._greeted = True
            state = event.get("state") or {}
            if not state.get("moves") and self.config.game.greeting:
                self.chat(self.config.game.greeting.format(bot=self.bot.user_name))
        log.info("game %s: we play %s", self.game_id, "white" if self._white else "black")
        self._game_state(event.get("state") or {})

    def _game_state(self, state: dict[str, Any]) -> None:
        moves = str(state.get("moves", "")).split()
        if moves != self._moves:
            self._last_change = time.monotonic()
        self._sync(moves)
        status = state.get("status", "started")
        if status in FINISHED:
            winner = state.get("winner")
            log.info("game %s over: %s%s", self.game_id, status, f", {winner} wins" if winner else "")
            if status != "aborted" and self.config.game.goodbye:
                self.chat(self.config.game.goodbye)
            self.finished.set()
            return
        if self._answer_offers(state):
            return
        if self._our_turn() and self._answered != len(self._moves):
            self._move(state)

    def _sync(self, moves: list[str]) -> None:
        """Bring the player to ``moves`` (its search tree is kept when they extend the last
        list); a takeback that removed our answer makes that position need a new one."""
        assert self._initial is not None and self._player is not None
        common = 0
        while common < min(len(moves), len(self._moves)) and moves[common] == self._moves[common]:
            common += 1
        if common < len(self._moves) and self._answered is not None and common <= self._answered:
            self._answered = None
        actions, state = [], self._initial
        for move in moves:
            actions.append(self.bot.game.text_to_action(state, move))
            state = state.play(actions[-1])
        self._moves = list(moves)
        self._player.set_position(self._initial, actions)

    def _our_turn(self) -> bool:
        assert self._player is not None
        return self._player.state.to_play == (0 if self._white else 1)  # player 0 is White

    def _answer_offers(self, state: dict[str, Any]) -> bool:
        """Answer the opponent's draw or takeback offer; True if that ended our business here."""
        them = "b" if self._white else "w"
        policy = self.config.game
        client = self.bot.client
        offers = (("draw", policy.accept_draws, client.answer_draw),
                  ("takeback", policy.accept_takebacks, client.answer_takeback))
        for offer, accept, answer in offers:
            if state.get(f"{them}{offer}") and (offer, len(self._moves)) not in self._offers_answered:
                self._offers_answered.add((offer, len(self._moves)))
                log.info("game %s: %s offer from the opponent: %s", self.game_id, offer, "yes" if accept else "no")
                self._send(answer, accept)
                if accept:
                    return True
        return False

    def _move(self, state: dict[str, Any]) -> None:
        assert self._player is not None
        if self._player.state.is_terminal:
            return
        settings = self.config.engine
        if settings.mode == "reactive":
            options = PlayOptions(mode="reactive")
        else:
            side = "w" if self._white else "b"
            budget = clock_budget(float(state.get(f"{side}time", 0)), float(state.get(f"{side}inc", 0)),
                                  overhead=settings.move_overhead)
            options = PlayOptions(mode="search", simulations=settings.simulations, time=budget)
        decision = self._player.decide(options)
        self._answered = len(self._moves)
        if self._resign.should_resign(decision.value):
            lost = self._resign.lost
            log.info("game %s: resigning (value %.3f for %d moves)", self.game_id, decision.value, lost)
            self._send(self.bot.client.resign)
            return
        log.info("game %s: move %d %s (value %+.3f, %d simulations, %.2f s)", self.game_id,
                 len(self._moves) + 1, decision.move, decision.value, decision.simulations, decision.elapsed)
        if not self._send(self.bot.client.move, decision.move):
            self._answered = None  # refused: answer again when lichess next shows the position

    def _opponent_gone(self, event: dict[str, Any]) -> None:
        seconds = event.get("claimWinInSeconds")
        log.info("game %s: opponent gone=%s (claim in %s s)", self.game_id, event.get("gone"), seconds)
        if event.get("gone") and seconds == 0:
            self._send(self.bot.client.claim_victory)

    def _check_idle(self) -> bool:
        """Abort a game whose opponent never made a first move; resign on a forced shutdown."""
        if self.bot.resigning.is_set():
            self._resign_for_shutdown()
            return True
        first_moves = self._player is not None and len(self._moves) < 2 and not self._our_turn()
        wait = self.config.game.abort_after
        if first_moves and time.monotonic() - self._last_change > wait:
            log.info("game %s: the opponent did not move for %.0f s; aborting", self.game_id, wait)
            self._send(self.bot.client.abort)
            self._last_change = time.monotonic()
        return False

    def _resign_for_shutdown(self) -> None:
        early = len(self._moves) < 2
        log.info("game %s: shutting down: %s", self.game_id, "abort" if early else "resign")
        client = self.bot.client
        self._send(client.abort if early else client.resign)
        self.finished.set()

    def chat(self, text: str) -> None:
        self._send(self.bot.client.chat, text)

    def _send(self, action: Callable[..., None], *args: Any) -> bool:
        """A game action: a client method, called with this game's id and ``args``.  A refusal
        (e.g. the game just ended) is logged, not fatal."""
        try:
            action(self.game_id, *args)
            return True
        except LichessError as error:
            log.warning("game %s: %s", self.game_id, error)
            return False


class Bot:
    """The account's event loop: challenges, game starts, resumption and shutdown."""

    def __init__(
        self,
        config: BotConfig,
        token: str,
        sleep: Callable[[float], None] = time.sleep,
        player_factory: Callable[[], Player] | None = None,
    ) -> None:
        if not token:
            raise ValueError("no lichess token: set the LICHESS_BOT_TOKEN environment variable")
        self.config = config
        self.client = LichessClient(config.base_url, token, config, sleep=sleep)
        self.game = klent.engine.games.get("chess", max_moves=None, claim_draws=False)
        self.stopping = threading.Event()  # no new games
        self.resigning = threading.Event()  # resign (or abort) the games in progress
        self.user_id = ""
        self.user_name = ""
        self._player_factory = player_factory
        self._lock = threading.Lock()
        self._games: dict[str, GameRunner] = {}
        self._accepted: set[str] = set()  # challenges accepted, game not started yet

    def make_player(self) -> Player:
        if self._player_factory is not None:
            return self._player_factory()
        settings = self.config.engine
        return Player.load(self.game, model=settings.model, threads=settings.threads, device=settings.device)

    def stop(self, resign: bool = False) -> None:
        """Stop taking challenges; games end as ``on_shutdown`` says, or are resigned now."""
        if resign or self.config.game.on_shutdown == "resign":
            self.resigning.set()
        self.stopping.set()

    def run(self) -> None:
        """Play until `stop` is called, then finish or resign the games in progress."""
        account = self.client.account()
        self.user_id = str(account.get("id", "")).lower()
        self.user_name = str(account.get("username", self.user_id))
        log.info("connected to %s as %s", self.config.base_url, self.user_name)
        for game in self.client.playing():
            self._start_game(str(game.get("gameId") or game.get("id")), resumed=True)
        events = threading.Thread(target=self._event_loop, name="lichess-events", daemon=True)
        events.start()
        self.stopping.wait()
        log.info("stopping: %s the games in progress", "resigning" if self.resigning.is_set() else "finishing")
        for runner in self.running_games():
            runner.finished.wait()
        self.client.close()

    def running_games(self) -> list[GameRunner]:
        with self._lock:
            return list(self._games.values())

    def game_ended(self, game_id: str) -> None:
        with self._lock:
            self._games.pop(game_id, None)

    def _event_loop(self) -> None:
        delay = self.config.network.backoff_base
        while not self.stopping.is_set():
            try:
                with self.client.event_stream() as events:
                    for event in events:
                        delay = self.config.network.backoff_base
                        if self.stopping.is_set():
                            return
                        if event is not None:
                            self._handle(event)
                raise StreamDropped("the event stream ended")
            except (StreamDropped, LichessError) as error:
                if self.stopping.is_set():
                    return  # the client was closed under the stream on purpose
                log.warning("event stream: %s; reconnecting in %.1f s", error, delay)
            except Exception as error:  # keep the account online whatever one event did
                log.error("event stream: unexpected %s: %s", type(error).__name__, self.client.redact(str(error)))
            if self.stopping.wait(delay):
                return
            delay = min(2 * delay, self.config.network.backoff_max)

    def _handle(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "challenge":
            self._challenge(event.get("challenge") or {})
        elif kind == "gameStart":
            game = event.get("game") or {}
            self._start_game(str(game.get("gameId") or game.get("id")), resumed=False)
        elif kind in ("challengeCanceled", "challengeDeclined"):
            with self._lock:
                self._accepted.discard(str((event.get("challenge") or {}).get("id")))
        elif kind == "gameFinish":
            log.info("game %s finished", (event.get("game") or {}).get("gameId"))

    def _challenge(self, challenge: dict[str, Any]) -> None:
        challenge_id = str(challenge.get("id"))
        challenger = str((challenge.get("challenger") or {}).get("id", "")).lower()
        if challenger == self.user_id:
            return  # our own outgoing challenge
        with self._lock:
            busy = len(self._games) + len(self._accepted) >= self.config.game.max_games
            reason = "later" if self.stopping.is_set() else decline_reason(challenge, self.config.challenge, busy)
            if reason is None:
                self._accepted.add(challenge_id)
        if reason is None:
            log.info("accepting challenge %s from %s", challenge_id, challenger)
            try:
                self.client.accept_challenge(challenge_id)
            except LichessError as error:
                log.warning("challenge %s: %s", challenge_id, error)
                with self._lock:
                    self._accepted.discard(challenge_id)
        else:
            log.info("declining challenge %s from %s: %s", challenge_id, challenger, reason)
            try:
                self.client.decline_challenge(challenge_id, reason)
            except LichessError as error:
                log.warning("challenge %s: %s", challenge_id, error)

    def _start_game(self, game_id: str, resumed: bool) -> None:
        with self._lock:
            self._accepted.discard(game_id)
            if game_id in self._games:
                return
            runner = GameRunner(self, game_id)
            self._games[game_id] = runner
        log.info("%s game %s", "resuming" if resumed else "starting", game_id)
        runner.start()
