/**
 * Text that carries what someone else wrote (an EgressService's name or {@code network}, a Node's name, an Event's
 * message, an exception's message), made safe for where it is printed: {@link Printable} for text a person reads
 * (terminal, Event, text log line), {@link ShellWords} for a word of a command a person may paste into a shell.
 * Uses nothing of the agent, so every package that prints may use it.
 */
package io.egressservice.text;
