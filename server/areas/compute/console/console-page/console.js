// Opens an instance's console from a URL collected with collectConsole (GET
// /v1/orgs/{org}/compute/vms/{vm_id}/console?operation=…). The URL may also come in the page's
// fragment (/console#ws://…), which browsers never send to a server. The WebSocket carries text:
// what the instance writes to its serial console, and the keys typed here.
(function () {
  'use strict';
  var form = document.getElementById('connect');
  var input = document.getElementById('url');
  var closeButton = document.getElementById('close');
  var status = document.getElementById('status');
  var term = new Terminal({ cursorBlink: true, convertEol: false, fontSize: 14, lineHeight: 1.15, scrollback: 5000 });
  term.open(document.getElementById('terminal'));
  var socket = null;

  function say(text, isError) {
    status.textContent = text;
    status.className = isError ? 'error' : '';
  }

  function connect(url) {
    if (socket) socket.close(1000, 'reconnecting');
    term.reset();
    say('Connecting…');
    var opened = false;
    try {
      socket = new WebSocket(url);
    } catch (error) {
      say('Not a WebSocket URL: ' + error.message, true);
      return;
    }
    var current = socket;
    current.onopen = function () {
      opened = true;
      closeButton.disabled = false;
      say('Connected. The console is live; type into it.');
      term.focus();
    };
    current.onmessage = function (event) {
      term.write(typeof event.data === 'string' ? event.data : new Uint8Array(event.data));
    };
    current.onclose = function (event) {
      closeButton.disabled = true;
      if (!opened)
        say('The console refused the connection: the URL is unknown, was already used, or has expired. Collect a new one.', true);
      else say('Disconnected (' + event.code + (event.reason ? ': ' + event.reason : '') + ')', event.code !== 1000);
      document.body.dataset.closeCode = String(event.code);
      if (socket === current) socket = null;
    };
  }

  term.onData(function (data) {
    if (socket && socket.readyState === WebSocket.OPEN) socket.send(data);
  });
  form.addEventListener('submit', function (event) {
    event.preventDefault();
    if (input.value.trim()) connect(input.value.trim());
  });
  closeButton.addEventListener('click', function () {
    if (socket) socket.close(1000, 'closed by the user');
  });
  if (location.hash.length > 1) {
    input.value = decodeURIComponent(location.hash.slice(1));
    // The secret leaves the address bar (and the history) once read.
    history.replaceState(null, '', location.pathname);
    connect(input.value);
  }
})();
